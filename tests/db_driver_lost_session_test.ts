// What a lost session leaves behind for the next one on the same connection. A backend ended in the
// middle of a query (a restart's FATAL 57P01) answers with an error response, then closes. postgres.js
// 3.4.9 kept that response past the close, and the next session's startup failed the next caller's
// query with it. Patch 3 of the vendored driver (src/db/vendor/postgres_js) has closed() forget the
// lost session's query, results and error response.
import assert from "node:assert/strict";
import { openDatabase, type Sql } from "../src/db/connect.ts";
import { isDatabaseUnavailable } from "../src/db/faults.ts";
import { withDeadline } from "../src/db/deadline.ts";
import { embedded, freshDatabase } from "./helpers/service.ts";

const SETTLE_MS = 5_000;

/** A fresh database straight to Postgres (past PgBouncer, when the suite runs behind one). */
async function directDatabase() {
  const database = await freshDatabase();
  const url = database.env.DATABASE_DIRECT_URL ?? database.env.DATABASE_URL;
  return { url, drop: database.drop };
}

Deno.test({
  name: "driver faults: a session ended in the middle of a query leaves its error to no later query",
  ignore: embedded, // The embedded PGlite runs in the process: there is no session to end.
  async fn() {
    const { url, drop } = await directDatabase();
    const db = await openDatabase({ databaseUrl: url, dataDir: "", maxConnections: 1 });
    const admin = await openDatabase({ databaseUrl: url, dataDir: "", maxConnections: 1 });
    try {
      await db.sql`select 1`;
      const [{ pid }] = await db.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const slow = db.sql`select pg_sleep(30)`.then(() => "answered", (error) => error);
      await withDeadline(waitForActive(admin.sql, pid), SETTLE_MS, "unchanged");
      // The server ends the session mid-query, as a restart does: FATAL 57P01, then the socket closes.
      await admin.sql`select pg_terminate_backend(${pid})`;
      const error = await withDeadline(slow, SETTLE_MS, "unknown");
      assert.ok(isDatabaseUnavailable(error), `The query in flight failed as unavailable, got ${error}`);
      // The next session's first query is answered, not failed with the old backend's 57P01.
      const [{ n }] = await withDeadline(
        Promise.resolve(db.sql<{ n: number }[]>`select 2 as n`),
        SETTLE_MS,
        "unchanged",
      );
      assert.equal(n, 2);
    } finally {
      await db.close();
      await admin.close();
      await drop();
    }
  },
});

async function waitForActive(sql: Sql, pid: number) {
  while (true) {
    const rows = await sql`select 1 from pg_stat_activity where pid = ${pid} and state = 'active'`;
    if (rows.length) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
