// The ledger under pressure: overdraft races, a crash in the middle of a burst, the audit and
// replay tasks, and the database refusing to change the log.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, embedded, runTask, startService } from "./helpers/service.ts";
import { withDatabase } from "./helpers/database.ts";

Deno.test("ledger invariants", async (t) => {
  const svc = await startService();
  try {
    await t.step("150 concurrent calls on 100 credits: exactly 100 served, 50 get 402", async () => {
      const client = walletClient(svc, await newToken(svc));
      const answers = await Promise.all(
        Array.from({ length: 150 }, (_, i) => client.post(`/kv/race/k${i}`, `v${i}`)),
      );
      const served = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status === 402);
      assert.equal(served.length, 100);
      assert.equal(refused.length, 50);
      assert.deepEqual(
        served.map((a) => a.balance).sort((a, b) => a! - b!),
        Array.from({ length: 100 }, (_, i) => i),
      );
      assert.ok(refused.every((a) => a.cost === 0 && a.balance === 0));
      const logs = await client.get("/token/logs");
      assert.equal(logs.status, 402, "the balance is 0");
    });

    await t.step("the audit is clean and summarizes the ledger", async () => {
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
      assert.match(
        audit.stdout,
        /audit: 1 wallets, \d+ events, 100 credits in, 100 credits out, 0 mismatches/,
      );
    });

    await t.step("replay rebuilds every projection exactly", async () => {
      const kv = walletClient(svc, await newToken(svc));
      await kv.post("/kv/b/kept", "v");
      await kv.post("/kv/b/deleted", "v");
      await kv.delete("/kv/b/deleted");
      await kv.post("/kv/b/replayed", "v", { "idempotency-key": "once" });
      if (embedded) await svc.stop();
      const replay = await runTask(svc, "replay");
      if (embedded) await svc.start();
      assert.equal(replay.code, 0, replay.stdout + replay.stderr);
      assert.match(replay.stdout, /wallets: 2 rows rebuilt, 0 differences/);
      assert.match(replay.stdout, /kv_entries: 102 rows rebuilt, 0 differences/);
      assert.match(replay.stdout, /idempotent_replies: 1 rows rebuilt, 0 differences/);
    });

    await t.step("the database refuses to update or delete events, even for the service's user", async () => {
      await withDatabase(svc, async ({ sql }) => {
        await assert.rejects(
          sql`update events set data = '{}' where version = 1`,
          /append-only: UPDATE refused/,
        );
        await assert.rejects(sql`delete from events`, /append-only: DELETE refused/);
        await assert.rejects(sql`truncate events`, /append-only: TRUNCATE refused/);
      });
    });

    await t.step(
      "the audit finds a projection that disagrees with the ledger, and replay does too",
      async () => {
        await withDatabase(svc, ({ sql }) => sql`update wallets set balance = balance + 7 where balance = 0`);
        const audit = await auditOf(svc);
        assert.equal(audit.code, 1);
        assert.match(audit.stdout, /MISMATCH wallet [0-9a-f]{64}: ledger says 0, projection says 7/);
        if (embedded) await svc.stop();
        const replay = await runTask(svc, "replay");
        if (embedded) await svc.start();
        assert.equal(replay.code, 1);
        assert.match(replay.stdout, /wallets: 2 rows rebuilt, 2 differences/);
        await withDatabase(svc, ({ sql }) => sql`update wallets set balance = balance - 7 where balance = 7`);
        assert.equal((await auditOf(svc)).code, 0);
      },
    );
  } finally {
    await svc.dispose();
  }
});

Deno.test("a crash in the middle of a burst of writes loses nothing that was answered", async () => {
  const svc = await startService();
  try {
    const client = walletClient(svc, await newToken(svc));
    const acknowledged: string[] = [];
    let stop = false;
    // Four writers keep writing until the service dies under them.
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; !stop && i < 15; i++) {
        const key = `w${w}i${i}`;
        try {
          const res = await client.post(`/kv/crash/${key}`, `value-${key}`);
          if (res.status === 200) acknowledged.push(key);
        } catch {
          return; // the connection died with the service
        }
      }
    });
    while (acknowledged.length < 20) await new Promise((r) => setTimeout(r, 5));
    await svc.kill();
    stop = true;
    await Promise.all(writers);
    await svc.start();
    assert.ok(acknowledged.length >= 20);
    for (const key of acknowledged) {
      const res = await client.get(`/kv/crash/${key}`);
      assert.equal(res.status, 200, `acknowledged write ${key} is there`);
      assert.equal(res.text, `value-${key}`);
    }
    const audit = await auditOf(svc);
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);
  } finally {
    await svc.dispose();
  }
});
