// Reading the call log: newest first, one credit per entry returned, filters and limits.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";

Deno.test("call logs", async (t) => {
  const svc = await startService();
  try {
    const client = walletClient(svc, await newToken(svc));

    await t.step("a fresh wallet has no entries: logs cost nothing", async () => {
      const res = await client.get("/token/logs");
      assert.equal(res.status, 200);
      assert.deepEqual(res.json(), { logs: [], n: 0 });
      assert.deepEqual([res.cost, res.balance], [0, 100]);
    });

    await t.step("every authenticated call shows up at once, newest first", async () => {
      await client.post("/kv/b/k?ttl=60", "v"); // 99
      await client.get("/kv/b/missing"); // 98, 404
      await client.get("/kv/reserved-b/k"); // 97, 400
      const res = await client.get("/token/logs?n=4"); // 4 entries for 4 credits
      assert.equal(res.status, 200);
      const { logs, n } = res.json();
      assert.equal(n, 4);
      assert.deepEqual([res.cost, res.balance], [4, 93]);
      assert.deepEqual(logs.map((l: any) => [l.method, l.path, l.status_code, l.cost, l.balance]), [
        ["GET", "/kv/reserved-b/k", 400, 1, 97],
        ["GET", "/kv/b/missing", 404, 1, 98],
        ["POST", "/kv/b/k?ttl=60", 200, 1, 99],
        ["GET", "/token/logs", 200, 0, 100],
      ]);
      const [bad, missing, written] = logs;
      assert.equal(bad.error, 'Invalid bucket: must not start with "reserved-"');
      assert.equal(missing.error, "Key Not Found");
      assert.equal("error" in written, false, "no error on success");
      assert.equal(written.endpoint, "kv");
      assert.match(written.id, /^[A-Za-z0-9]{20}$/);
      assert.ok(written.response_time_ms >= 0);
      const expires = Date.parse(written.expiration) - Date.parse(written.timestamp);
      assert.equal(expires, 7 * 24 * 3600 * 1000);
    });

    await t.step("default n is 5, type filters by endpoint", async () => {
      const res = await client.get("/token/logs");
      assert.equal(res.json().n, 5);
      assert.equal(res.cost, 5);
      const kvOnly = await client.get("/token/logs?n=100&type=kv");
      assert.ok(kvOnly.json().logs.every((l: any) => l.endpoint === "kv"));
      assert.equal(kvOnly.json().n, 3);
      assert.equal(kvOnly.cost, 3);
      const tokenOnly = await client.get("/token/logs?type=token&n=2");
      assert.deepEqual(tokenOnly.json().logs.map((l: any) => l.path), [
        "/token/logs?n=100&type=kv",
        "/token/logs",
      ]);
    });

    await t.step("n outside 1..100 and unknown types are 400", async () => {
      for (const query of ["n=0", "n=101", "n=abc", "n=1.5", "type=dns"]) {
        const res = await client.get(`/token/logs?${query}`);
        assert.equal(res.status, 400, query);
        assert.match(res.text, /^Invalid (n|type): /);
        assert.equal(res.cost, 1);
      }
    });

    await t.step(
      "with fewer credits than entries it returns what the balance pays for; 0 credits is 402",
      async () => {
        const poor = walletClient(svc, await newToken(svc));
        for (let i = 0; i < 97; i++) await poor.get("/kv/b/none"); // balance 3, 97 entries
        const res = await poor.get("/token/logs?n=10");
        assert.equal(res.status, 200);
        assert.deepEqual([res.json().n, res.cost, res.balance], [3, 3, 0]);
        const empty = await poor.get("/token/logs");
        assert.deepEqual([empty.status, empty.text, empty.cost], [402, "Insufficient credits", 0]);
        const afterwards = await poor.get("/recharge"); // free: still answers and is logged
        assert.equal(afterwards.status, 200);
      },
    );
  } finally {
    await svc.dispose();
  }
});
