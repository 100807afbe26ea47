// The bucket listing's decision, without a database: the page from a walk's names, where the next
// page resumes (after the last name shown, or after the last one walked when the walk hit its bound),
// buckets whose keys all expired left out, and cursors that only this listing's prefix accepts.
import assert from "node:assert/strict";
import { decodeBucketCursor, encodeBucketCursor, listBuckets } from "../src/kv/bucket_listing.ts";
import { type KvWalkedBucket, MAX_BUCKETS_WALKED } from "../projections/kv.ts";

const walked = (bucket: string, matches = true, live = true): KvWalkedBucket => ({ bucket, matches, live });

function page(listing: { prefix: string; limit: number }, names: KvWalkedBucket[]) {
  const decision = listBuckets(listing, names);
  const body = JSON.parse((decision.outcome as { body: string }).body);
  const resume = body.nextCursor === null ? null : decodeBucketCursor(body.nextCursor, listing.prefix);
  return { buckets: body.buckets, resume };
}

Deno.test("bucket listing: a walk that ended is the last page; dead buckets are not shown", () => {
  assert.deepEqual(page({ prefix: "", limit: 10 }, [walked("a"), walked("b", true, false), walked("c")]), {
    buckets: ["a", "c"],
    resume: null,
  });
});

Deno.test("bucket listing: limit + 1 names with the prefix resume after the last one shown", () => {
  const names = [walked("n1"), walked("o", false), walked("n2"), walked("n3")];
  assert.deepEqual(page({ prefix: "n", limit: 2 }, names), {
    buckets: ["n1", "n2"],
    resume: { after: "n2" },
  });
});

Deno.test("bucket listing: a walk at its bound resumes after the last name walked, even with none shown", () => {
  const names = Array.from({ length: MAX_BUCKETS_WALKED }, (_, i) => walked(`x${i}`, false));
  assert.deepEqual(page({ prefix: "n", limit: 5 }, names), {
    buckets: [],
    resume: { after: `x${MAX_BUCKETS_WALKED - 1}` },
  });
});

Deno.test("bucket cursor: only a listing with the same prefix takes it", () => {
  const cursor = encodeBucketCursor("no", "notes");
  assert.deepEqual(decodeBucketCursor(cursor, "no"), { after: "notes" });
  for (const [value, prefix] of [[cursor, "n"], ["abc", ""], ["!!", ""], [btoa('["b","","x"]'), ""]]) {
    const refused = decodeBucketCursor(value, prefix);
    assert.ok("phrase" in refused, value);
    assert.match(refused.phrase, /must be a nextCursor of a bucket listing with the same prefix$/);
  }
});
