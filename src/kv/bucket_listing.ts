// Listing a wallet's buckets (issue 27, for a console's data browser), pure: the names a walk of
// the table found, those with the prefix and a live key, at most `limit`, and an opaque cursor that
// resumes after the last name looked at. A page may hold fewer names than the limit (a walk bounded
// by MAX_BUCKETS_WALKED, a bucket whose keys all expired) and still have a next one.
import { type KvWalkedBucket, MAX_BUCKETS_WALKED } from "../../projections/kv.ts";
import type { CallDecision } from "../ledger/command.ts";
import { answer, jsonReply, type Reply } from "../calls/reply.ts";
import { isStorable, quoteInput } from "../storable_text.ts";

export interface KvBucketListing {
  prefix: string;
  /** Names after this one (the cursor's), or from the start. */
  after?: string;
  limit: number;
}

const CURSOR_KIND = "buckets";

function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The cursor that resumes a bucket listing with `prefix` after `bucket`. */
export function encodeBucketCursor(prefix: string, bucket: string): string {
  return base64url(JSON.stringify([CURSOR_KIND, prefix, bucket]));
}

/** The name a cursor resumes after, or the 400 phrase when no bucket listing with `prefix` gave it. */
export function decodeBucketCursor(cursor: string, prefix: string): { after: string } | { phrase: string } {
  const phrase = `Invalid cursor ${
    quoteInput(cursor)
  }: must be a nextCursor of a bucket listing with the same prefix`;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return { phrase };
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    const valid = Array.isArray(value) && value.length === 3 && value[0] === CURSOR_KIND &&
      value[1] === prefix &&
      typeof value[2] === "string" && value[2].length > 0 && isStorable(value[2]);
    return valid ? { after: value[2] } : { phrase };
  } catch {
    return { phrase };
  }
}

/** GET /kv: a page of bucket names with live keys, and the cursor after the last name looked at. */
export function listBuckets(listing: KvBucketListing, walked: KvWalkedBucket[]): CallDecision<Reply> {
  const matching = walked.filter((b) => b.matches);
  let page = matching;
  let resumeAfter: string | undefined;
  if (matching.length > listing.limit) {
    page = matching.slice(0, listing.limit);
    resumeAfter = page[page.length - 1].bucket;
  } else if (walked.length >= MAX_BUCKETS_WALKED) {
    resumeAfter = walked[walked.length - 1].bucket;
  }
  return answer(jsonReply(200, {
    buckets: page.filter((b) => b.live).map((b) => b.bucket),
    nextCursor: resumeAfter === undefined ? null : encodeBucketCursor(listing.prefix, resumeAfter),
  }));
}
