// Counters through HTTP: increments of any size and sign, the TTL rules, what is 409 or 400, and
// 1,000 concurrent increments that give exactly 1,000.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";

const INCREMENTS = 1000;
/** Requests in flight at once: enough to share ledger batches, well under the per-address limit. */
const CONCURRENCY = 50;
const MAX = Number.MAX_SAFE_INTEGER;

Deno.test("counters", async (t) => {
  const svc = await startService({ env: { PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET } });
  try {
    const kv = walletClient(svc, await newToken(svc));

    await t.step("a missing key counts from 0; by may be negative; the answer is the new value", async () => {
      const first = await kv.post("/kv/c/hits/incr");
      assert.deepEqual([first.status, first.text, first.cost], [200, "1", 1]);
      assert.equal(first.headers.get("content-type"), "text/plain; charset=utf-8");
      assert.equal((await kv.post("/kv/c/hits/incr?by=41")).text, "42");
      assert.equal((await kv.post("/kv/c/hits/incr?by=-50")).text, "-8");
      assert.equal((await kv.get("/kv/c/hits")).text, "-8");
      await kv.post("/kv/c/written", "100");
      assert.equal((await kv.post("/kv/c/written/incr?by=0")).text, "100");
      assert.equal((await kv.post(`/kv/c/low/incr?by=-${MAX}`)).text, String(-MAX), "the lowest counter");
    });

    await t.step("a new key takes ttl (default 30 days); an existing key keeps its expiry", async () => {
      assert.equal((await kv.post("/kv/c/fresh/incr?ttl=1")).text, "1");
      await kv.post("/kv/c/short?ttl=1", "5");
      assert.equal((await kv.post("/kv/c/short/incr?ttl=3600")).text, "6", "ttl ignored for an existing key");
      const listed = (await kv.get("/kv/c?prefix=hits")).json().keys[0];
      const left = Date.parse(listed.expiresAt) - Date.now();
      assert.ok(left > 2_591_000_000, `default ttl (${listed.expiresAt})`);
      await new Promise((r) => setTimeout(r, 1300));
      assert.equal((await kv.get("/kv/c/fresh")).status, 404);
      assert.equal((await kv.get("/kv/c/short")).status, 404, "it kept the 1 s it had");
      assert.equal((await kv.post("/kv/c/short/incr")).text, "1", "expired counts as missing");
    });

    await t.step("a value that is not an integer, or a result out of range, is 409, charged", async () => {
      await kv.post("/kv/c/text", "hello");
      const text = await kv.post("/kv/c/text/incr");
      assert.deepEqual([text.status, text.cost], [409, 1]);
      assert.equal(
        text.text,
        `Cannot increment "hello": the value must be an integer from -${MAX} to ${MAX}`,
      );
      assert.equal((await kv.get("/kv/c/text")).text, "hello");
      await kv.post("/kv/c/top", String(MAX));
      const over = await kv.post("/kv/c/top/incr");
      assert.deepEqual([over.status, over.text], [
        409,
        `Cannot increment ${MAX} by 1: the result must be from -${MAX} to ${MAX}`,
      ]);
      assert.equal((await kv.get("/kv/c/top")).text, String(MAX));
      assert.equal((await kv.post("/kv/c/top/incr?by=-1")).text, String(MAX - 1));
    });

    await t.step("a bad by or ttl is 400, charged; incr takes POST only", async () => {
      const rule = `Invalid by: must be an integer from -${MAX} to ${MAX}`;
      for (const by of ["1.5", "abc", "", "9007199254740992", "+1", "1e3"]) {
        const res = await kv.post(`/kv/c/bad/incr?by=${encodeURIComponent(by)}`);
        assert.deepEqual([res.status, res.text, res.cost], [400, rule, 1], `by=${by}`);
      }
      const ttl = await kv.post("/kv/c/bad/incr?ttl=-1");
      assert.deepEqual([ttl.status, ttl.text], [400, "Invalid ttl: must be an integer from 0 to 2592000"]);
      assert.equal((await kv.get("/kv/c/bad")).status, 404, "nothing was created");
      const get = await kv.get("/kv/c/hits/incr");
      assert.deepEqual([get.status, get.text, get.cost], [
        400,
        "Invalid method GET: /kv/{bucket}/{key}/incr takes POST",
        1,
      ]);
    });

    await t.step("an Idempotency-Key makes a retried increment count once", async () => {
      const first = await kv.post("/kv/c/once/incr?by=5", undefined, { "idempotency-key": "add-5" });
      const retry = await kv.post("/kv/c/once/incr?by=5", undefined, { "idempotency-key": "add-5" });
      assert.deepEqual([first.text, retry.text, retry.headers.get("idempotent-replayed")], [
        "5",
        "5",
        "true",
      ]);
      assert.equal((await kv.get("/kv/c/once")).text, "5");
    });

    await t.step(`${INCREMENTS} concurrent increments give exactly ${INCREMENTS}`, async () => {
      await buyCredits(svc, kv.token);
      const answers: string[] = [];
      let next = 0;
      async function worker() {
        while (next < INCREMENTS) {
          next++;
          const res = await kv.post("/kv/c/total/incr");
          assert.equal(res.status, 200, res.text);
          answers.push(res.text);
        }
      }
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      assert.equal((await kv.get("/kv/c/total")).text, String(INCREMENTS));
      const values = answers.map(Number).sort((a, b) => a - b);
      assert.deepEqual(
        values,
        Array.from({ length: INCREMENTS }, (_, i) => i + 1),
        "each value answered once",
      );
    });
  } finally {
    await svc.dispose();
  }
});
