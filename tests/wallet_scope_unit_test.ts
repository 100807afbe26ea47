// The wallet-scope checker of tests/citus_readiness_test.ts can fail: statements that join two
// wallets' rows, or touch a wallet table with no wallet pinned, are caught; per-wallet and batch
// statements pass.
import assert from "node:assert/strict";
import { checkStatements, statementsOf, walletScopeProblem } from "./helpers/wallet_scope.ts";

const WALLET_TABLES = new Set(["wallets", "kv_entries", "webhooks", "events"]);
const problem = (sql: string) => walletScopeProblem(sql.toLowerCase(), WALLET_TABLES);

Deno.test("statements pinned to one wallet pass", () => {
  assert.equal(problem("select value from kv_entries where wallet_id = $p0 and key = $p1"), undefined);
  assert.equal(problem("select * from wallets where wallet_id = any($p0) for update"), undefined);
  assert.equal(
    problem(
      "select kv.* from unnest($p0::text[], $p1::text[]) as x(w, k) cross join lateral " +
        "(select * from kv_entries e where e.wallet_id = x.w and e.key = x.k) kv",
    ),
    undefined,
  );
  assert.equal(
    problem("select h.* from webhooks h join wallets w on w.wallet_id = h.wallet_id where h.wallet_id = $p0"),
    undefined,
  );
  assert.equal(
    problem(
      "insert into events (wallet_id, version) select x.w, x.v from jsonb_to_recordset($p0) as x(w text, v int)",
    ),
    undefined,
  );
  assert.equal(problem("select value from service_settings where name = $p0"), undefined);
});

Deno.test("statements that join two wallets' rows, or pin none, fail", () => {
  // Rows of two wallets paired by a key that is not the wallet.
  assert.match(
    problem("select a.value from kv_entries a join kv_entries b on a.key = b.key where a.wallet_id = $p0")!,
    /not tied to one another/,
  );
  // Each table pinned, but to different wallets.
  assert.match(
    problem("select * from wallets w, kv_entries k where w.wallet_id = $p0 and k.wallet_id = $p1")!,
    /not tied to one another/,
  );
  // A wallet table with no wallet at all.
  assert.match(problem("select sum(balance) from wallets where balance > 0")!, /not pinned/);
  assert.match(problem("update kv_entries set value = 'x' where key = $p0")!, /not pinned/);
  // Inserting what was selected from any wallet.
  assert.match(problem("insert into kv_entries select * from kv_entries where key = $p0")!, /not pinned/);
});

Deno.test("a bad statement injected into source is found, and only an allow-list entry lets it pass", () => {
  const source = [
    "export async function good(sql: Sql, walletId: string) {",
    "  return await sql`select * from kv_entries where wallet_id = ${walletId}`;",
    "}",
    "export async function bad(sql: Sql, key: string) {",
    "  return await sql`select a.value from kv_entries a join kv_entries b on b.key = a.key",
    "    where a.wallet_id = ${key}`;",
    "}",
  ].join("\n");
  const statements = statementsOf("src/injected.ts", source);
  assert.equal(statements.length, 2);
  const { findings } = checkStatements(statements, WALLET_TABLES, []);
  assert.deepEqual(findings.map((f) => f.statement.line), [5]);
  const allowed = [{ file: "src/injected.ts", contains: "b.key = a.key", reason: "test" }];
  const checked = checkStatements(statements, WALLET_TABLES, allowed);
  assert.deepEqual(checked.findings, []);
  assert.deepEqual(checkStatements(statements.slice(0, 1), WALLET_TABLES, allowed).unused, allowed);
});
