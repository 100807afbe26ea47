// Conditional writes through HTTP: the ETag of a read, If-Match and If-None-Match on POST and DELETE,
// and 50 concurrent read-modify-write clients that lose no update.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";

const CLIENTS = 50;
const UPDATES_PER_CLIENT = 2;
const MAX_ATTEMPTS = 500;

Deno.test("conditional writes", async (t) => {
  const svc = await startService({ env: { PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET } });
  try {
    const kv = walletClient(svc, await newToken(svc));

    await t.step("a read answers an ETag that changes on every write of the key, not on reads", async () => {
      await kv.post("/kv/b/doc", "v1");
      const first = await kv.get("/kv/b/doc");
      const etag = first.headers.get("etag")!;
      assert.match(etag, /^"\d+"$/);
      assert.equal((await kv.get("/kv/b/doc")).headers.get("etag"), etag, "a read changes nothing");
      await kv.post("/kv/b/other", "x");
      assert.equal((await kv.get("/kv/b/doc")).headers.get("etag"), etag, "another key's write neither");
      await kv.post("/kv/b/doc", "v1");
      const rewritten = (await kv.get("/kv/b/doc")).headers.get("etag");
      assert.notEqual(rewritten, etag, "the same value written again is a new version");
      assert.equal((await kv.get("/kv/b/missing")).headers.get("etag"), null);
    });

    await t.step(
      "If-Match: the current ETag writes; a stale one is 412, charged, nothing changes",
      async () => {
        const etag = (await kv.get("/kv/b/doc")).headers.get("etag")!;
        const ok = await kv.post("/kv/b/doc", "v2", { "if-match": etag });
        assert.deepEqual([ok.status, ok.text, ok.cost], [200, "OK", 1]);
        const stale = await kv.post("/kv/b/doc", "v3", { "if-match": etag });
        assert.deepEqual([stale.status, stale.cost], [412, 1]);
        assert.match(stale.text, /^Precondition Failed: If-Match does not match/);
        assert.equal(stale.balance, ok.balance! - 1);
        assert.equal((await kv.get("/kv/b/doc")).text, "v2");
        const listed = await kv.post("/kv/b/doc", "v3", { "if-match": `"1", ${etag}, "999999"` });
        assert.equal(listed.status, 412, "none of the list is current");
        const any = await kv.post("/kv/b/doc", "v4", { "if-match": "*" });
        assert.equal(any.status, 200, "* matches any existing entry");
        assert.equal((await kv.post("/kv/b/nothing", "v", { "if-match": "*" })).status, 412);
        assert.equal((await kv.get("/kv/b/nothing")).status, 404, "and wrote nothing");
      },
    );

    await t.step("If-None-Match: * creates a missing key and never overwrites one", async () => {
      const created = await kv.post("/kv/b/once", "first", { "if-none-match": "*" });
      assert.equal(created.status, 200);
      const again = await kv.post("/kv/b/once", "second", { "if-none-match": "*" });
      assert.deepEqual([again.status, again.text, again.cost], [
        412,
        "Precondition Failed: If-None-Match: * but the key exists",
        1,
      ]);
      assert.equal((await kv.get("/kv/b/once")).text, "first");
      await kv.post("/kv/b/brief?ttl=1", "soon gone");
      await new Promise((r) => setTimeout(r, 1300));
      assert.equal(
        (await kv.post("/kv/b/brief", "new", { "if-none-match": "*" })).status,
        200,
        "expired is missing",
      );
    });

    await t.step("DELETE honours If-Match", async () => {
      await kv.post("/kv/b/del", "v");
      const etag = (await kv.get("/kv/b/del")).headers.get("etag")!;
      await kv.post("/kv/b/del", "changed");
      const stale = await kv.delete("/kv/b/del", { "if-match": etag });
      assert.deepEqual([stale.status, stale.cost], [412, 1]);
      assert.equal((await kv.get("/kv/b/del")).text, "changed");
      const current = (await kv.get("/kv/b/del")).headers.get("etag")!;
      assert.equal((await kv.delete("/kv/b/del", { "if-match": current })).status, 200);
      assert.equal((await kv.delete("/kv/b/del", { "if-match": current })).status, 412, "gone: 412, not 404");
      assert.equal((await kv.delete("/kv/b/del")).status, 404);
    });

    await t.step("a malformed condition is 400, charged, and writes nothing", async () => {
      for (const header of ["if-match", "if-none-match"]) {
        for (const value of ["12", '"12', "W/12"]) {
          const res = await kv.post("/kv/b/malformed", "v", { [header]: value });
          assert.equal(res.status, 400, `${header}: ${value}`);
          assert.equal(res.text, `Invalid ${header}: must be * or a list of quoted ETags such as "12"`);
          assert.equal(res.cost, 1);
        }
      }
      assert.equal((await kv.get("/kv/b/malformed")).status, 404);
    });

    await t.step(`${CLIENTS} concurrent read-modify-write clients with If-Match lose no update`, async () => {
      await buyCredits(svc, kv.token);
      await kv.post("/kv/race/counter", "0");
      let conflicts = 0;
      async function client() {
        for (let done = 0, attempts = 0; done < UPDATES_PER_CLIENT; attempts++) {
          assert.ok(attempts < MAX_ATTEMPTS, "a client made no progress");
          const read = await kv.get("/kv/race/counter");
          assert.equal(read.status, 200);
          const write = await kv.post("/kv/race/counter", String(Number(read.text) + 1), {
            "if-match": read.headers.get("etag")!,
          });
          if (write.status === 200) done++;
          else if (write.status === 412) conflicts++;
          else assert.fail(`unexpected ${write.status}: ${write.text}`);
        }
      }
      await Promise.all(Array.from({ length: CLIENTS }, client));
      assert.equal((await kv.get("/kv/race/counter")).text, String(CLIENTS * UPDATES_PER_CLIENT));
      assert.ok(conflicts > 0, "the clients did race");
    });
  } finally {
    await svc.dispose();
  }
});
