// A connection lost while the driver fetches the array types. On a new session postgres.js first asks
// the server for its array types, holding the caller's first query until they arrive. A backend that
// ends then (a restart's "terminating connection due to administrator command") rejected the driver's
// own promise for the types, which nobody awaits: Deno ends the process on such a rejection. Patch 5
// (src/db/vendor/postgres_js) lets that promise go; patch 8 has the next session start clean, so it
// fetches the types again and runs the caller's query, which was never sent. Before patch 8 that
// session failed the query with the old backend's error and skipped the types: arrays came back as
// strings ("{1,2}") for as long as the connection lived.
import assert from "node:assert/strict";
import { openDatabase } from "../src/db/connect.ts";
import { withDeadline } from "../src/db/deadline.ts";
import { embedded, freshDatabase } from "./helpers/service.ts";
import { startFaultProxy } from "./helpers/fault_proxy.ts";

const SETTLE_MS = 5_000;

Deno.test({
  name: "driver faults: a session lost while it fetches the array types is opened again, types and query",
  ignore: embedded, // The embedded PGlite runs in the process: there is no session to end.
  async fn() {
    const database = await freshDatabase();
    // Straight to Postgres (past PgBouncer, when the suite runs behind one): the session to end is ours.
    const url = database.env.DATABASE_DIRECT_URL ?? database.env.DATABASE_URL;
    const direct = await openDatabase({ databaseUrl: url, dataDir: "", maxConnections: 1 });
    const proxy = startFaultProxy({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
    const db = await openDatabase({ databaseUrl: proxy.urlFor(url), dataDir: "", maxConnections: 1 });
    try {
      // The driver's query for the array types (pg_type's typarray) never reaches the server.
      const fetchingTypes = proxy.stallOn("typarray");
      const first = db.sql<{ n: number }[]>`select 1 as n`.execute();
      await withDeadline(fetchingTypes, SETTLE_MS, "unchanged");
      // The server ends that session, as a restart does: FATAL 57P01 answers the types' query.
      const [{ ended }] = await direct.sql<{ ended: number }[]>`
        select count(pg_terminate_backend(pid))::int as ended from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()`;
      assert.equal(ended, 1, "The pool's one session was ended");
      // The query had not been sent: the next session runs it, once it has fetched the types.
      const [{ n }] = await withDeadline(Promise.resolve(first), SETTLE_MS, "unchanged");
      assert.equal(n, 1);
      const [{ numbers }] = await withDeadline(
        Promise.resolve(db.sql<{ numbers: number[] }[]>`select array[1, 2]::int[] as numbers`),
        SETTLE_MS,
        "unchanged",
      );
      assert.deepEqual(numbers, [1, 2]);
    } finally {
      await db.close();
      await direct.close();
      await proxy.close();
      await database.drop();
    }
  },
});
