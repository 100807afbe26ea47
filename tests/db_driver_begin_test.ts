// sql.begin() must reserve the connection its BEGIN goes out on. postgres.js 3.4.9 reserves it in the
// BEGIN's `onexecute` hook, which execute() runs only when the connection can take more queries
// (upstream #1189 and #823, pull request #1218), and the vendored copy's patch 6 returns before the
// hook for a query queued behind an unsent one: either way the BEGIN went out on a connection still
// in the pool, begin() failed with a TypeError the service could not catch (it ends the process), and
// the session stayed open in that transaction, so later queries ran inside it and nothing they wrote
// was committed (in a pool of several connections begin() failed with UNSAFE_TRANSACTION instead,
// its BEGIN still left open). Patch 7 (src/db/vendor/postgres_js) reserves the connection whenever
// BEGIN is written or queued on it.
import assert from "node:assert/strict";
import { type Database, openDatabase, type Sql } from "../src/db/connect.ts";
import { withDeadline } from "../src/db/deadline.ts";
import { embedded, type FreshDatabase, freshDatabase, openOptionsOf } from "./helpers/service.ts";

/** The driver's default `max_pipeline`: queries written ahead on one connection before it is full. */
const MAX_PIPELINE = 100;
const SETTLE_MS = 5_000;

async function withPool(
  options: { pooler?: "transaction"; maxConnections?: number },
  fn: (sql: Sql, database: FreshDatabase) => Promise<void>,
): Promise<void> {
  const database = await freshDatabase();
  const maxConnections = options.maxConnections ?? 1;
  let db: Database | undefined;
  try {
    // One connection by default, as the embedded database always has: every query below shares it.
    db = await openDatabase({ ...openOptionsOf(database.env), ...options, maxConnections });
    // Every connection open and idle, so that the queries below are spread over them in turn.
    await Promise.all(Array.from({ length: maxConnections }, () => db!.sql`select pg_sleep(0.05)`));
    await fn(db.sql, database);
  } finally {
    await db?.close();
    await database.drop();
  }
}

/** A transaction whose work shows it ran: a transaction-local setting read back inside it. */
function probeTransaction(sql: Sql): Promise<string> {
  return sql.begin(async (tx) => {
    await tx`select set_config('driver_test.probe', 'in transaction', true)`;
    const [{ probe }] = await tx<{ probe: string }[]>`select current_setting('driver_test.probe') as probe`;
    return probe;
  });
}

/** The pool's session is not left inside a transaction: a transaction-local setting ends with its query. */
async function assertNoOpenTransaction(sql: Sql) {
  await sql`select set_config('driver_test.left', 'open', true)`;
  const [{ left }] = await sql<{ left: string | null }[]>`
    select current_setting('driver_test.left', true) as left`;
  assert.notEqual(left, "open", "The pool's session was left inside the transaction");
}

/**
 * Each connection gets one query in progress and MAX_PIPELINE - 1 written behind it (the pool deals
 * queries to its busy connections in turn), so the BEGIN is the query that fills the first one.
 */
function fillPipelines(sql: Sql, connections: number): Promise<unknown> {
  const ahead = Array.from({ length: MAX_PIPELINE * connections }, () => sql`select 1 as ahead`.execute());
  return Promise.all(ahead);
}

Deno.test("driver: a BEGIN that fills its connection's pipeline reserves the connection", async () => {
  await withPool({}, async (sql) => {
    const ahead = fillPipelines(sql, 1);
    const probe = await withDeadline(probeTransaction(sql), SETTLE_MS, "unknown");
    assert.equal(probe, "in transaction");
    await withDeadline(ahead, SETTLE_MS, "unchanged");
    await assertNoOpenTransaction(sql);
  });
});

Deno.test({
  name: "driver: a BEGIN that fills a connection's pipeline in a pool of several reserves the connection",
  ignore: embedded, // The embedded database's pool is one connection, whatever is asked.
  async fn() {
    const connections = 3;
    await withPool({ maxConnections: connections }, async (sql, database) => {
      const ahead = fillPipelines(sql, connections);
      // Before patch 7 this failed with UNSAFE_TRANSACTION, its BEGIN left open on a pooled session.
      const probe = await withDeadline(probeTransaction(sql), SETTLE_MS, "unknown");
      assert.equal(probe, "in transaction");
      await withDeadline(ahead, SETTLE_MS, "unchanged");
      const url = database.env.DATABASE_DIRECT_URL ?? database.env.DATABASE_URL;
      const direct = await openDatabase({ databaseUrl: url, dataDir: "", maxConnections: 1 });
      try {
        const open = await direct.sql`
          select pid from pg_stat_activity
          where datname = current_database() and state like 'idle in transaction%'`;
        assert.deepEqual([...open], [], "No session of the pool was left inside a transaction");
      } finally {
        await direct.close();
      }
    });
  },
});

Deno.test({
  name:
    "driver: a BEGIN queued behind an unsent parameterised query (prepare: false) reserves the connection",
  // prepare: false is the transaction-mode pooler's setting; the embedded database never uses it.
  ignore: embedded,
  async fn() {
    await withPool({ pooler: "transaction" }, async (sql) => {
      // Patch 6 holds a parameterised query unwritten behind the one in progress, and anything queued
      // after it. The pool only queues more on that connection once a reserved session gives it back
      // with its queries still in flight.
      const reserved = await sql.reserve();
      const slow = reserved`select pg_sleep(0.2)`.execute();
      const unsent = reserved<{ n: number }[]>`select ${7}::int as n`.execute();
      await new Promise((resolve) => setTimeout(resolve, 0)); // Both are on the connection now.
      reserved.release();
      const probe = await withDeadline(probeTransaction(sql), SETTLE_MS, "unknown");
      assert.equal(probe, "in transaction");
      await withDeadline(slow, SETTLE_MS, "unchanged");
      const [{ n }] = await withDeadline(unsent, SETTLE_MS, "unchanged");
      assert.equal(n, 7);
      await assertNoOpenTransaction(sql);
    });
  },
});
