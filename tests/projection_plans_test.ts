// A batch's writes reach the rows of its wallets by index, whatever the table's size: a DELETE (and
// once an UPDATE) joined with jsonb_to_recordset was planned as a scan of the whole table once it
// held a few thousand rows (every billed call's batch paid for it), so the plans are checked here.
// The wallets are written back by an upsert, which meets their rows through its arbiter index.
import assert from "node:assert/strict";
import { migrate } from "../src/db/migrate.ts";
import { statements } from "../projections/projection_sql.ts";
import { walletsProjection } from "../projections/wallets.ts";
import { kvProjection } from "../projections/kv.ts";
import { withFreshDatabase } from "./helpers/database.ts";

const WALLETS = 10_000;
const hex = (i: number) => i.toString(16).padStart(64, "0");

Deno.test("a batch's write-back and delete of 2 wallets' rows use the key's index, not a scan, on 10,000 wallets", async () => {
  await withFreshDatabase(async (sql) => {
    await migrate(sql);
    await sql.unsafe(
      `insert into wallets (wallet_id, balance, version, created_at, last_used_at)
       select lpad(to_hex(i), 64, '0'), 100, 1, now(), now() from generate_series(1, ${WALLETS}) i`,
    );
    await sql.unsafe(
      `insert into kv_entries (wallet_id, bucket, key, value, expires_at, version)
       select lpad(to_hex(i), 64, '0'), 'b', 'k', 'v', now() + interval '1 day', 1
       from generate_series(1, ${WALLETS}) i`,
    );
    await sql`analyze wallets`;
    await sql`analyze kv_entries`;
    const plan = async (text: string, rows: object[]) => {
      const lines = await sql.unsafe(`explain ${text}`, [sql.json(rows as never) as never]);
      return lines.map((line) => String(Object.values(line)[0])).join("\n");
    };
    const two = [hex(7), hex(4_000)];
    const wallets = await statements(sql, walletsProjection);
    // Every column of the two rows as they are, with a new balance: what a batch writes back.
    const current = await sql`select * from wallets where wallet_id = any(${two}) order by wallet_id`;
    const walletRows = current.map((row) => ({ ...row, balance: 5 }));
    const kv = await statements(sql, kvProjection);
    const kvKeys = two.map((wallet_id) => ({ wallet_id, bucket: "b", key: "k" }));
    for (
      const [what, text, rows] of [
        ["wallets upsert", wallets.upsert, walletRows],
        ["kv delete", kv.deleteKeys, kvKeys],
      ] as const
    ) {
      const shown = await plan(text, rows);
      assert.doesNotMatch(shown, /Seq Scan on (wallets|kv_entries)/, `${what} scans the table:\n${shown}`);
      assert.match(shown, /Index|Bitmap/, `${what} uses an index:\n${shown}`);
    }
    // And the statement does what it says: the two wallets' rows change, no other.
    await sql.unsafe(wallets.upsert, [sql.json(walletRows as never) as never]);
    const changed = await sql`select wallet_id from wallets where balance = 5 order by wallet_id`;
    assert.deepEqual(changed.map((r) => r.wallet_id), two);
  });
});
