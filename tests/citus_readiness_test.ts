// The schema is ready to shard by wallet (Citus): read from the catalog of a freshly migrated
// database, every table's primary key and unique constraints lead with wallet_id, except the
// documented global tables and keys (src/db/global_tables.ts), none of them stale; the README's
// "Scaling" section places every table; and no SQL statement in the code joins two wallets' rows.
import assert from "node:assert/strict";
import { openDatabase, type Sql } from "../src/db/connect.ts";
import { migrate } from "../src/db/migrate.ts";
import { GLOBAL_KEYS, GLOBAL_TABLES, globalTable } from "../src/db/global_tables.ts";
import { freshDatabase, openOptionsOf } from "./helpers/service.ts";
import { type AllowedStatement, checkStatements, statementsUnder } from "./helpers/wallet_scope.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/**
 * Statements that touch many wallets' rows on purpose. None joins one wallet's rows with another's;
 * on Citus each runs on every shard (a sweep, a queue's claim) or on the coordinator (tasks).
 */
const ALLOWED: readonly AllowedStatement[] = [
  { file: "src/tasks/bench/", reason: "the bench's own seeding and measurements, not the service" },
  { file: "src/tasks/noisy_neighbour/", reason: "the noisy-neighbour task's measurements, not the service" },
  {
    file: "src/tasks/restore_drill/",
    reason: "the restore drill compares every wallet of a restored database with its source, read-only",
  },
  { file: "src/tasks/audit.ts", reason: "the audit reads every wallet's log and row, read-only" },
  { file: "src/tasks/replay_writers.ts", reason: "replay rebuilds every read model into its own schema" },
  { file: "events/store.ts", contains: "order by wallet_id, version", reason: "the log by wallet: audit" },
  { file: "src/db/migrate.ts", reason: "the migration files: DDL, run on the coordinator" },
  {
    file: "src/tasks/rotate_master_key.ts",
    contains: "where master_key_id = $p0",
    reason: "rotation re-wraps every wallet's data key, each row alone",
  },
  { file: "src/tasks/replay.ts", reason: "replay holds the erased wallets' call logs until their erasure" },
  {
    file: "src/tasks/seal_history.ts",
    reason: "the one-off sealing of an old log, every wallet's events in order",
  },
  {
    file: "src/secrets/key_check.ts",
    contains: "from wallet_keys where wrapped_key is not null",
    reason: "at start: whether any data key exists at all",
  },
  {
    file: "projections/projection_sql.ts",
    reason: "the generic read-model writer matches rows on every key column, which lead with " +
      "wallet_id (checked below); its batches carry one wallet per key row",
  },
  // Sweeps: each deleted row alone, by its own expiry; no row is read with another.
  {
    file: "projections/kv.ts",
    contains: "delete from kv_entries where expires_at",
    reason: "KV expiry sweep",
  },
  { file: "projections/idempotent_replies.ts", contains: "delete from", reason: "idempotency expiry sweep" },
  { file: "projections/scoped_keys.ts", contains: "delete from", reason: "sweep of long-dead keys" },
  { file: "src/schedules/claims.ts", contains: "claimed_until < $p0", reason: "sweep of run-out claims" },
  // Work queues: due rows of any wallet are claimed together; each is then handled in its own
  // wallet's transaction. On Citus each node claims its own shards' rows.
  { file: "src/schedules/claims.ts", contains: "with due as", reason: "the scheduler claims due runs" },
  {
    file: "src/webhooks/delivery_claims.ts",
    contains: "with due as",
    reason: "the delivery worker claims due rows",
  },
  {
    file: "src/webhooks/outbox_gauges.ts",
    reason:
      "the /metrics outbox reading: bounded counts and the oldest rows over every wallet, every 5 s at most",
  },
  { file: "projections/wallets.ts", contains: "last_used_at <", reason: "idle wallets for deactivation" },
  { file: "projections/schedules.ts", contains: "select distinct h.wallet_id", reason: "schedule adoption" },
  // Lookups by a global key (GLOBAL_KEYS): the unique key itself finds the one wallet.
  { file: "projections/scoped_keys.ts", contains: "k.key_hash = $p0", reason: "a scoped key by its hash" },
  { file: "projections/webhooks.ts", contains: "h.email = $p0", reason: "a mailbox by its address" },
];

interface TableKeys {
  table: string;
  /** Primary key, unique constraints and unique indexes: their columns in order. */
  keys: { name: string; columns: string[] }[];
}

/** Every table of the service's schemas (partitioned parents, not their partitions) and its unique keys. */
async function tableKeys(sql: Sql): Promise<TableKeys[]> {
  const rows = await sql<{ table: string; index: string; columns: string[] }[]>`
    select c.relname::text as table, i.relname::text as index,
           array(select a.attname::text from unnest(x.indkey) with ordinality k(attnum, n)
                 join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum order by k.n) as columns
    from pg_class c
    join pg_namespace s on s.oid = c.relnamespace
    left join pg_index x on x.indrelid = c.oid and x.indisunique
    left join pg_class i on i.oid = x.indexrelid
    where c.relkind in ('r', 'p') and not c.relispartition
      and s.nspname not in ('pg_catalog', 'information_schema', 'pg_toast')
    order by c.relname, i.relname`;
  const tables = new Map<string, TableKeys>();
  for (const row of rows) {
    const entry = tables.get(row.table) ?? { table: row.table, keys: [] };
    if (row.index) entry.keys.push({ name: row.index, columns: row.columns });
    tables.set(row.table, entry);
  }
  return [...tables.values()];
}

async function withMigratedDatabase(work: (tables: TableKeys[]) => Promise<void>) {
  const database = await freshDatabase();
  const db = await openDatabase({ ...openOptionsOf(database.env), maxConnections: 1 });
  try {
    await migrate(db.direct);
    await work(await tableKeys(db.sql));
  } finally {
    await db.close();
    await database.drop();
  }
}

const isGlobalKey = (table: string, columns: string[]) =>
  GLOBAL_KEYS.some((k) => k.table === table && k.columns.join() === columns.join());

Deno.test("every unique key leads with wallet_id, except the documented global tables and keys", async () => {
  await withMigratedDatabase(async (tables) => {
    assert.ok(tables.length > 10, `only ${tables.length} tables read`);
    const wrong: string[] = [];
    for (const { table, keys } of tables) {
      if (globalTable(table)) continue;
      if (!keys.some((k) => k.columns[0] === "wallet_id")) {
        wrong.push(`${table}: no key leads with wallet_id`);
      }
      for (const key of keys) {
        if (key.columns[0] !== "wallet_id" && !isGlobalKey(table, key.columns)) {
          wrong.push(`${table}.${key.name} (${key.columns.join(", ")})`);
        }
      }
    }
    assert.deepEqual(wrong, []);
    const names = new Set(tables.map((t) => t.table));
    assert.deepEqual(GLOBAL_TABLES.filter((g) => !names.has(g.table)).map((g) => g.table), [], "stale");
    const stale = GLOBAL_KEYS.filter((g) =>
      !tables.some((t) => t.table === g.table && t.keys.some((k) => k.columns.join() === g.columns.join()))
    );
    assert.deepEqual(stale.map((g) => `${g.table} (${g.columns})`), [], "stale global keys");

    // The README's Scaling section places every table, and no table that is gone.
    const readme = await Deno.readTextFile(`${ROOT}README.md`);
    const scaling = readme.slice(readme.indexOf("## Scaling"));
    for (const table of names) {
      const placed = globalTable(table)?.plan === "kept on the coordinator"
        ? new RegExp(`\`${table}\`[^\\n]*coordinator`)
        : new RegExp(`create_(distributed|reference)_table\\('${table}'`);
      assert.match(scaling, placed, `README Scaling places ${table}`);
    }
    for (const m of scaling.matchAll(/create_(?:distributed|reference)_table\('([a-z_]+)'/g)) {
      assert.ok(names.has(m[1]), `README Scaling names ${m[1]}, which is not a table`);
    }
  });
});

Deno.test("no statement in the code joins two wallets' rows", async () => {
  await withMigratedDatabase(async (tables) => {
    const walletTables = new Set(tables.map((t) => t.table).filter((t) => !globalTable(t)));
    const statements = await statementsUnder(ROOT, ["src", "events", "projections"]);
    assert.ok(statements.length > 100, `only ${statements.length} statements found`);
    const { findings, unused } = checkStatements(statements, walletTables, ALLOWED);
    assert.deepEqual(
      findings.map((f) => `${f.statement.file}:${f.statement.line}: ${f.problem}: ${f.statement.text}`),
      [],
    );
    assert.deepEqual(unused, [], "allow-list entries that no statement needs");
    // The generic writer's statements match on the key columns: they must lead with wallet_id.
    for await (const entry of Deno.readDir(`${ROOT}projections`)) {
      const text = await Deno.readTextFile(`${ROOT}projections/${entry.name}`);
      for (const m of text.matchAll(/keyColumns: \[\s*"([a-z_]+)"/g)) {
        assert.equal(m[1], "wallet_id", `projections/${entry.name}: keyColumns start with ${m[1]}`);
      }
    }
  });
});
