// sql.begin() must reserve the connection its BEGIN goes out on. postgres.js 3.4.9 reserves it in the
// BEGIN's `onexecute` hook, which execute() runs only when the connection can take more queries
// (upstream #1189 and #823, pull request #1218), and the vendored copy's patch 6 returns before the
// hook for a query queued behind an unsent one: either way the BEGIN went out on a connection still
// in the pool, begin() failed with a TypeError the service could not catch (it ends the process), and
// the session stayed open in that transaction, so later queries ran inside it and nothing they wrote
// was committed. Patch 7 (src/db/vendor/postgres_js) reserves the connection whenever BEGIN is
// written or queued on it.
import assert from "node:assert/strict";
import { type Database, openDatabase, type Sql } from "../src/db/connect.ts";
import { withDeadline } from "../src/db/deadline.ts";
import { embedded, freshDatabase, openOptionsOf } from "./helpers/service.ts";

/** The driver's default `max_pipeline`: queries written ahead on one connection before it is full. */
const MAX_PIPELINE = 100;
const SETTLE_MS = 5_000;

async function withPool(
  options: { pooler?: "transaction" },
  fn: (sql: Sql) => Promise<void>,
): Promise<void> {
  const database = await freshDatabase();
  let db: Database | undefined;
  try {
    // One connection, as the embedded database always has: every query below shares it.
    db = await openDatabase({ ...openOptionsOf(database.env), ...options, maxConnections: 1 });
    await db.sql`select 1`;
    await fn(db.sql);
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

/** The pool's session is not left inside a transaction: a transaction-local setting ends with its statement. */
async function assertNoOpenTransaction(sql: Sql) {
  await sql`select set_config('driver_test.left', 'open', true)`;
  const [{ left }] = await sql<{ left: string | null }[]>`
    select current_setting('driver_test.left', true) as left`;
  assert.notEqual(left, "open", "The pool's session was left inside the transaction");
}

Deno.test("driver: a BEGIN that fills its connection's pipeline reserves the connection", async () => {
  await withPool({}, async (sql) => {
    // One query in progress and MAX_PIPELINE - 1 written behind it; the BEGIN is the one that fills it.
    const ahead = Array.from({ length: MAX_PIPELINE }, () => sql`select 1 as ahead`.execute());
    const transaction = probeTransaction(sql);
    const probe = await withDeadline(transaction, SETTLE_MS, "unknown");
    assert.equal(probe, "in transaction");
    await withDeadline(Promise.all(ahead), SETTLE_MS, "unchanged");
    await assertNoOpenTransaction(sql);
  });
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
