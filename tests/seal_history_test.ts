// A database from before issue 23: its events hold sensitive fields in clear. seal-history seals
// them in place with each wallet's key (an erased wallet's read "[erased]"), touches no money, and
// leaves the audit clean and the replay equal; a second run finds nothing left.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { sealHistory } from "../src/tasks/seal_history.ts";
import { replayProjections } from "../src/tasks/replay.ts";
import { auditLedger } from "../src/tasks/audit.ts";

Deno.test("seal-history seals the events written in clear, and the ledger still adds up", async () => {
  // The ledger without a sealer writes as the service did before issue 23.
  const svc = await inProcessService({}, { sealer: undefined });
  try {
    const [kept, erased] = [await svc.newToken(), await svc.newToken()];
    for (const [token, name] of [[kept, "kept"], [erased, "gone"]]) {
      const res = await svc.request("POST", `/kv/zqbucket${name}/k`, { token, body: `zqvalue${name}` });
      assert.equal(res.status, 200, res.text);
    }
    assert.equal((await svc.request("DELETE", "/token", { token: erased })).status, 200);
    const sql = svc.db.sql;
    const logText = async () =>
      (await sql<{ t: string }[]>`select coalesce(string_agg(data::text, ' '), '') as t from events`)[0].t;
    assert.match(await logText(), /zqvaluekept/, "the old log holds the value in clear");
    const money = async () =>
      await sql`select wallet_id, version, type, data->'cost' as cost, data->'balance' as balance,
                       data->'amount' as amount from events order by wallet_id, version`;
    const before = await money();

    assert.ok(await sealHistory(sql, svc.secrets.keys) >= 4);
    const text = await logText();
    for (const secret of ["zqvaluekept", "zqbucketkept", "zqvaluegone", "zqbucketgone"]) {
      assert.ok(!text.includes(secret), `"${secret}" is still in the log in clear`);
    }
    assert.match(text, /\[erased\]/, "the erased wallet's old fields read as erased");
    assert.deepEqual(await money(), before, "amounts, balances and costs untouched");
    assert.deepEqual((await auditLedger(sql)).mismatches, []);
    const replay = await replayProjections(sql, { keys: svc.secrets.keys });
    for (const table of replay.tables) {
      assert.deepEqual(
        [table.table, table.onlyLive, table.onlyReplayed],
        [table.table, 0, 0],
        table.samples.join("\n"),
      );
    }
    assert.equal(await sealHistory(sql, svc.secrets.keys), 0);
    await assert.rejects(sql`update events set data = '{}' where version = 1`, /append-only/);
  } finally {
    await svc.close();
  }
});
