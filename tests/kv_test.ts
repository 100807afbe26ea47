// A user's key-value session: write, read, overwrite, expire, delete, and every bad input.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";

Deno.test("key-value store", async (t) => {
  const svc = await startService();
  try {
    const kv = walletClient(svc, await newToken(svc));

    await t.step("write, read, overwrite and delete, 1 credit each", async () => {
      const written = await kv.post("/kv/default/greeting", "hello");
      assert.equal(written.status, 200);
      assert.equal(written.text, "OK");
      assert.equal(written.headers.get("content-type"), "text/plain; charset=utf-8");
      assert.deepEqual([written.cost, written.balance], [1, 99]);
      const read = await kv.get("/kv/default/greeting");
      assert.deepEqual([read.status, read.text, read.cost, read.balance], [200, "hello", 1, 98]);
      await kv.post("/kv/default/greeting", "hello again");
      assert.equal((await kv.get("/kv/default/greeting")).text, "hello again");
      const deleted = await kv.delete("/kv/default/greeting");
      assert.deepEqual([deleted.status, deleted.text], [200, "OK"]);
      const gone = await kv.get("/kv/default/greeting");
      assert.deepEqual([gone.status, gone.text, gone.cost], [404, "Key Not Found", 1]);
      const again = await kv.delete("/kv/default/greeting");
      assert.deepEqual([again.status, again.text, again.cost], [404, "Key Not Found", 1]);
    });

    await t.step("buckets keep keys apart; values keep any text", async () => {
      const text = 'Ünïcödé ✓ "quotes" \\ {braces}\nnew line 🎉';
      await kv.post("/kv/one/k", text);
      await kv.post("/kv/two/k", "other");
      assert.equal((await kv.get("/kv/one/k")).text, text);
      assert.equal((await kv.get("/kv/two/k")).text, "other");
      await kv.post("/kv/one/empty", "");
      const empty = await kv.get("/kv/one/empty");
      assert.deepEqual([empty.status, empty.text], [200, ""]);
      const encoded = await kv.post("/kv/my%20bucket/caf%C3%A9", "v");
      assert.equal(encoded.status, 200);
      assert.equal((await kv.get("/kv/my%20bucket/caf%C3%A9")).text, "v");
    });

    await t.step("a value of 1000 characters is kept, 1001 is 400 and charged", async () => {
      const emoji = "🎉".repeat(1000); // 1000 code points, 2000 UTF-16 units
      assert.equal((await kv.post("/kv/b/long", emoji)).status, 200);
      assert.equal((await kv.get("/kv/b/long")).text, emoji);
      const tooLong = await kv.post("/kv/b/long", "x".repeat(1001));
      assert.equal(tooLong.status, 400);
      assert.equal(tooLong.text, "Invalid value: must be at most 1000 characters");
      assert.equal(tooLong.cost, 1);
      assert.equal((await kv.get("/kv/b/long")).text, emoji, "the stored value did not change");
    });

    await t.step("bucket and key rules are 400 with a phrase naming the rule", async () => {
      const cases: [string, string][] = [
        ["/kv/reserved-x/k", 'Invalid bucket: must not start with "reserved-"'],
        ["/kv/bucket---/k", 'Invalid bucket: must not end with "---"'],
        [`/kv/${"b".repeat(31)}/k`, "Invalid bucket: must be 1 to 30 characters"],
        [`/kv/b/${"k".repeat(31)}`, "Invalid key: must be 1 to 30 characters"],
        ["/kv/b/a%2Fb", 'Invalid key: must not contain "/"'],
        ["/kv/b/a%00b", "Invalid key: must not contain control characters"],
      ];
      for (const [path, phrase] of cases) {
        for (const res of [await kv.get(path), await kv.post(path, "v"), await kv.delete(path)]) {
          assert.equal(res.status, 400, path);
          assert.equal(res.text, phrase);
          assert.equal(res.cost, 1);
        }
      }
      assert.equal((await kv.get(`/kv/${"b".repeat(30)}/${"k".repeat(30)}`)).status, 404, "30 is allowed");
    });

    await t.step("ttl must be an integer from 0 to 2592000", async () => {
      for (const ttl of ["-1", "1.5", "abc", "2592001", ""]) {
        const res = await kv.post(`/kv/b/ttl?ttl=${ttl}`, "v");
        assert.equal(res.status, 400, `ttl=${ttl}`);
        assert.equal(res.text, "Invalid ttl: must be an integer from 0 to 2592000");
      }
      assert.equal((await kv.get("/kv/b/ttl")).status, 404, "nothing was written");
      for (const ttl of ["0", "2592000", "60"]) {
        assert.equal((await kv.post(`/kv/b/ttl?ttl=${ttl}`, "v")).status, 200);
      }
    });

    await t.step("an expired entry reads as missing, and a write sets a fresh ttl", async () => {
      await kv.post("/kv/b/short?ttl=1", "soon gone");
      await kv.post("/kv/b/renewed?ttl=1", "first");
      await kv.post("/kv/b/renewed", "second");
      await new Promise((r) => setTimeout(r, 1300));
      assert.equal((await kv.get("/kv/b/short")).status, 404);
      assert.equal((await kv.delete("/kv/b/short")).status, 404);
      assert.equal((await kv.get("/kv/b/renewed")).text, "second");
    });

    await t.step("another wallet does not see these keys", async () => {
      const other = walletClient(svc, await newToken(svc));
      assert.equal((await other.get("/kv/two/k")).status, 404);
    });

    await t.step("an empty wallet gets 402 for every KV call and nothing is written", async () => {
      const client = walletClient(svc, await newToken(svc));
      for (let i = 0; i < 100; i++) await client.post(`/kv/b/k${i % 3}`, `v${i}`);
      const refused = await client.post("/kv/b/new", "v");
      assert.deepEqual([refused.status, refused.text, refused.cost, refused.balance], [
        402,
        "Insufficient credits",
        0,
        0,
      ]);
      assert.equal((await client.get("/kv/b/k0")).status, 402);
      assert.equal((await client.post("/kv/reserved-x/k", "v")).status, 402, "402 before validation");
    });
  } finally {
    await svc.dispose();
  }
});

Deno.test("a KV path with a missing name or an extra segment is 400, not an unknown path", async () => {
  const svc = await startService();
  try {
    const kv = walletClient(svc, await newToken(svc));
    // GET /kv/bucket lists the bucket (issue 15); writing or deleting it names no key.
    for (const res of [await kv.post("/kv/bucket", "v"), await kv.delete("/kv/bucket")]) {
      assert.deepEqual([res.status, res.text, res.cost], [400, "Invalid key: must be 1 to 30 characters", 1]);
    }
    const cases: [string, string][] = [
      ["/kv/bucket/", "Invalid key: must be 1 to 30 characters"],
      ["/kv//key", "Invalid bucket: must be 1 to 30 characters"],
      ["/kv/bucket/a/b", 'Invalid key: must not contain "/"'],
    ];
    for (const [path, phrase] of cases) {
      const res = await kv.get(path);
      assert.deepEqual([res.status, res.text, res.cost], [400, phrase, 1], path);
    }
    assert.equal((await kv.post("/kv/bucket/a/b", "v")).status, 400);
    const anonymous = await call(svc, "GET", "/kv/bucket/a/b");
    assert.equal(anonymous.status, 401, "authentication comes first");
  } finally {
    await svc.dispose();
  }
});
