// Listing a bucket through HTTP: key order, prefixes, pages and cursors, expiry, and bad input.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";

interface Listed {
  key: string;
  expiresAt: string;
  size: number;
}

Deno.test("listing a bucket's keys", async (t) => {
  const svc = await startService();
  try {
    const kv = walletClient(svc, await newToken(svc));
    const keys = ["user:2", "user:10", "caf%C3%A9", "user:1", "order:1", "%F0%9F%8E%89", "%EE%80%80"];
    for (const key of keys) assert.equal((await kv.post(`/kv/shop/${key}`, `value of ${key}`)).status, 200);
    await kv.post("/kv/other/user:3", "elsewhere");

    await t.step("all live keys in code-point order, with expiry and size in bytes, 1 credit", async () => {
      const before = Date.now();
      const res = await kv.get("/kv/shop");
      assert.deepEqual([res.status, res.cost, res.headers.get("content-type")], [200, 1, "application/json"]);
      const body = res.json<{ keys: Listed[]; nextCursor: string | null }>();
      assert.deepEqual(body.keys.map((k) => k.key), [
        "caf\u00e9",
        "order:1",
        "user:1",
        "user:10",
        "user:2",
        "\u{E000}",
        "\u{1F389}",
      ]);
      assert.equal(body.nextCursor, null);
      const cafe = body.keys[0];
      assert.equal(cafe.size, new TextEncoder().encode("value of caf%C3%A9").length);
      const expires = Date.parse(cafe.expiresAt) - before;
      assert.ok(
        expires > 2_591_000_000 && expires <= 2_592_000_000 + 5000,
        `default ttl (${cafe.expiresAt})`,
      );
    });

    await t.step("a prefix, and pages of a limit followed by their cursor, each page billed", async () => {
      const users = await kv.get("/kv/shop?prefix=user:");
      assert.deepEqual(users.json().keys.map((k: Listed) => k.key), ["user:1", "user:10", "user:2"]);
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      const balance = (await kv.get("/token")).balance!;
      do {
        const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
        const page = await kv.get(`/kv/shop?limit=2${query}`);
        assert.equal(page.status, 200, page.text);
        const body = page.json<{ keys: Listed[]; nextCursor: string | null }>();
        assert.ok(body.keys.length <= 2);
        seen.push(...body.keys.map((k) => k.key));
        cursor = body.nextCursor;
        pages++;
      } while (cursor !== null && pages < 10);
      assert.equal(seen.length, 7);
      assert.equal(pages, 4);
      assert.equal((await kv.get("/token")).balance, balance - 1 - 4, "one credit a page");
    });

    await t.step("deleted and expired keys never appear", async () => {
      await kv.delete("/kv/shop/order:1");
      await kv.post("/kv/shop/brief?ttl=1", "soon gone");
      assert.ok((await kv.get("/kv/shop?prefix=b")).json().keys.length === 1);
      await new Promise((r) => setTimeout(r, 1300));
      assert.deepEqual((await kv.get("/kv/shop?prefix=b")).json().keys, []);
      assert.deepEqual((await kv.get("/kv/shop?prefix=order")).json().keys, []);
    });

    await t.step("an empty or unknown bucket, and another wallet, list nothing", async () => {
      assert.deepEqual((await kv.get("/kv/nothing")).json(), { keys: [], nextCursor: null });
      const other = walletClient(svc, await newToken(svc));
      assert.deepEqual((await other.get("/kv/shop")).json(), { keys: [], nextCursor: null });
    });

    await t.step("bad limit, prefix, cursor or bucket: 400 with a phrase, charged", async () => {
      const limitRule = "Invalid limit: must be an integer from 1 to 100";
      const cursorRule = "must be a nextCursor of a listing of the same bucket and prefix";
      const page = (await kv.get("/kv/shop?prefix=user:&limit=1")).json();
      const cases: [string, string | RegExp][] = [
        ["/kv/shop?limit=0", limitRule],
        ["/kv/shop?limit=101", limitRule],
        ["/kv/shop?limit=1.5", limitRule],
        ["/kv/shop?limit=", limitRule],
        [`/kv/shop?prefix=${"p".repeat(31)}`, "Invalid prefix: must be at most 30 characters"],
        ["/kv/shop?prefix=a%2Fb", 'Invalid prefix: must not contain "/"'],
        ["/kv/shop?cursor=not-a-cursor", new RegExp(`^Invalid cursor "not-a-cursor": ${cursorRule}$`)],
        [`/kv/shop?cursor=${page.nextCursor}`, new RegExp(cursorRule)],
        [`/kv/other?prefix=user:&cursor=${page.nextCursor}`, new RegExp(cursorRule)],
        ["/kv/reserved-x", 'Invalid bucket: must not start with "reserved-"'],
      ];
      for (const [path, phrase] of cases) {
        const res = await kv.get(path);
        assert.equal(res.status, 400, path);
        if (typeof phrase === "string") assert.equal(res.text, phrase);
        else assert.match(res.text, phrase);
        assert.equal(res.cost, 1);
      }
      assert.equal((await kv.get(`/kv/shop?prefix=user:&cursor=${page.nextCursor}`)).status, 200);
    });
  } finally {
    await svc.dispose();
  }
});
