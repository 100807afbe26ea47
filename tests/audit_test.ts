// The audit over wallet ranges audited side by side: clean on an honest ledger, and every kind
// of mismatch found in whichever range its wallet falls.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { AUDIT_PARTS, auditLedger } from "../src/tasks/audit.ts";

Deno.test("the audit finds a misstated balance and a tampered projection, in any wallet range", async () => {
  const svc = await inProcessService();
  try {
    const tokens = await Promise.all(Array.from({ length: 6 }, () => svc.newToken()));
    for (const token of tokens) {
      assert.equal((await svc.request("POST", "/kv/b/k", { token, body: "v" })).status, 200);
    }
    const clean = await auditLedger(svc.db.sql);
    assert.deepEqual(clean.mismatches, []);
    assert.deepEqual([clean.wallets, clean.creditsIn, clean.creditsOut], [6, 600, 6]);
    assert.ok(AUDIT_PARTS >= 2);

    const ids = (await svc.db.sql`select wallet_id from wallets order by wallet_id`).map((r) => r.wallet_id);
    const [first, last] = [ids[0], ids[ids.length - 1]];
    const [{ version }] = await svc.db.sql`select version from wallets where wallet_id = ${first}`;
    // The first wallet's next event states a balance its stream does not add up to; its
    // projection follows the debit, so only the statement is wrong.
    await svc.db.sql`
      insert into events (wallet_id, version, type, data, recorded_at)
      select wallet_id, version + 1, 'CallBilled',
             jsonb_build_object('callId', 'forged', 'method', 'GET', 'path', '/kv/b/k', 'endpoint', 'kv',
                                'status', 200, 'cost', 1, 'balance', 42, 'ms', 1), now()
      from wallets where wallet_id = ${first}`;
    await svc.db
      .sql`update wallets set balance = balance - 1, version = version + 1 where wallet_id = ${first}`;
    // The last wallet's projection is tampered with.
    await svc.db.sql`update wallets set balance = balance + 7 where wallet_id = ${last}`;

    const report = await auditLedger(svc.db.sql);
    assert.deepEqual(
      report.mismatches.sort(),
      [
        `wallet ${first} version ${version + 1} (CallBilled): states balance 42, events sum to 98`,
        `wallet ${last}: ledger says 99, projection says 106`,
      ].sort(),
    );
    assert.equal(report.events, clean.events + 1);
  } finally {
    await svc.close();
  }
});
