// GET /kv lists the wallet's buckets (issue 27, the console's data browser): names with a live key,
// by prefix, in cursor pages, 1 credit a page; another wallet's buckets never, a scoped key not at all.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test({
  name: "kv buckets: listed by prefix in cursor pages, live ones only, the wallet's own",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const svc = await startService();
    try {
      const client = walletClient(svc, await newToken(svc));
      const other = walletClient(svc, await newToken(svc));
      assert.equal((await other.post("/kv/secret-plans/k", "x")).status, 200);
      const empty = await client.get("/kv");
      assert.deepEqual([empty.status, empty.cost, empty.json()], [200, 1, { buckets: [], nextCursor: null }]);

      for (const bucket of ["notes", "alpha", "notes-old", "zeta", "notes"]) {
        assert.equal((await client.post(`/kv/${bucket}/k-${Math.random()}`, "v")).status, 200);
      }
      assert.equal((await client.post("/kv/short/k?ttl=1", "v")).status, 200);
      await sleep(1100);

      const all = await client.get("/kv");
      assert.deepEqual([all.status, all.cost], [200, 1], all.text);
      assert.deepEqual(all.json(), { buckets: ["alpha", "notes", "notes-old", "zeta"], nextCursor: null });
      const notes = (await client.get("/kv?prefix=notes")).json();
      assert.deepEqual(notes, { buckets: ["notes", "notes-old"], nextCursor: null });

      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor ? `&cursor=${cursor}` : "";
        const page = await client.get(`/kv?limit=1${query}`);
        assert.equal(page.status, 200, page.text);
        seen.push(...page.json().buckets);
        cursor = page.json().nextCursor;
        pages++;
      } while (cursor && pages < 10);
      assert.deepEqual(seen, ["alpha", "notes", "notes-old", "zeta"], "every page, each name once");

      const first = (await client.get("/kv?limit=1")).json();
      const wrong = await client.get(`/kv?prefix=z&cursor=${first.nextCursor}`);
      assert.deepEqual([wrong.status, wrong.cost], [400, 1]);
      assert.match(
        wrong.text,
        /^Invalid cursor .*: must be a nextCursor of a bucket listing with the same prefix$/,
      );
      const badLimit = await client.get("/kv?limit=0");
      assert.equal(badLimit.status, 400);

      const made = await client.postJson("/token/keys", { name: "reader", scope: "read" });
      assert.equal(made.status, 200, made.text);
      const keyed = walletClient(svc, made.json().key);
      const refused = await keyed.get("/kv");
      assert.equal(refused.status, 403, refused.text);
    } finally {
      await svc.dispose();
    }
  },
});
