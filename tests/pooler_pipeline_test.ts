// Queries pipelined on one connection through PgBouncer (1.18) in transaction mode. Without named
// statements the driver sends a query with parameters as Parse/Describe/Flush and binds it once the
// types are known; PgBouncer only counts the Syncs a client sent, so behind a query ending in Sync
// it gave the server back to its pool at that query's ReadyForQuery and dropped the Describe's
// answer ("got packet '1' from server when not linked"): the query never settled. The patched
// driver (src/db/vendor/postgres_js, patch 6) writes such a query only once those before it have settled.
import assert from "node:assert/strict";
import { openDatabase } from "../src/db/connect.ts";
import { withDeadline } from "../src/db/deadline.ts";
import { hasPgBouncer, startPgBouncer } from "../src/tasks/pgbouncer.ts";
import { databaseOn } from "./helpers/service.ts";

/** The PostgreSQL the suite uses, or the local one that .ci/run starts for the embedded run too. */
const SERVER = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/postgres";
const ROUNDS = 40;
/** Enough to parse that the Describe's answer comes well after the ReadyForQuery before it. */
const SLOW_TO_PARSE = "select $1::int as n" + " union all select 0".repeat(300);

Deno.test({
  name: "pooler: a parameterised query pipelined behind another settles through PgBouncer",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    if (!await hasPgBouncer()) {
      throw new Error("pgbouncer is not installed: apt-get install pgbouncer (.ci/run installs it)");
    }
    const server = new URL(SERVER);
    const bouncer = await startPgBouncer({ serverPort: Number(server.port || 5432) });
    // One connection, so that every round's two queries share it.
    const db = await openDatabase({
      databaseUrl: databaseOn(bouncer.url("postgres"), server.pathname.slice(1)),
      pooler: "transaction",
      dataDir: "",
      maxConnections: 1,
    });
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const both = Promise.all([
          db.sql`select 'plain' as tag`, // no parameters: Parse/Describe/Bind/Execute/Sync
          db.sql.unsafe(SLOW_TO_PARSE, [round]),
        ]);
        const [[plain], [first]] = await withDeadline(both, 5_000, "unchanged");
        assert.equal(plain.tag, "plain");
        assert.equal(first.n, round);
      }
    } finally {
      await db.close();
      await bouncer.stop();
    }
  },
});
