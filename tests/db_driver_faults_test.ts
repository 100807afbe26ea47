// The database driver through lost connections, with the fault proxy between it and Postgres:
// transactions and plain queries under load while every connection is cut again and again and new
// ones are refused for a while. postgres.js 3.4.9 as published ends the process here with an
// uncaught "Cannot read properties of null (reading 'write')" or leaves pooled connections that
// never answer again; the patched copy (src/db/vendor/postgres_js) must fail only the work in flight, with
// errors the service classifies as "database unavailable", keep every transaction whole, and serve
// again as soon as the proxy lets it.
import assert from "node:assert/strict";
import { type Database, openDatabase } from "../src/db/connect.ts";
import { isDatabaseUnavailable } from "../src/db/faults.ts";
import { withDeadline } from "../src/db/deadline.ts";
import { embedded, freshDatabase, openOptionsOf } from "./helpers/service.ts";
import { type FaultProxy, startFaultProxy } from "./helpers/fault_proxy.ts";

const WORKERS = 16;
const CUT_EVERY_MS = 120;
const CUTTING_MS = 3_000;
const REFUSED_MS = 1_500;
/** A query that has not settled by then is stuck on a connection that will never answer. */
const SETTLE_MS = 5_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Harness {
  /** A connection straight to the database, to check what was written. */
  direct: Database;
  /** The service's driver configuration, through the proxy. */
  db: Database;
  proxy: FaultProxy;
  close(): Promise<void>;
}

async function harness(maxConnections: number): Promise<Harness> {
  const database = await freshDatabase();
  const direct = await openDatabase(openOptionsOf(database.env));
  await direct.sql`create table tx_parts (tx int, part int, primary key (tx, part))`;
  const proxy = startFaultProxy({
    hostname: "127.0.0.1",
    port: Number(new URL(database.env.DATABASE_URL).port),
  });
  const db = await openDatabase({
    ...openOptionsOf(database.env),
    databaseUrl: proxy.urlFor(database.env.DATABASE_URL),
    maxConnections,
    connectTimeoutMs: 2_000,
  });
  return {
    direct,
    db,
    proxy,
    async close() {
      await db.close();
      await direct.close();
      await proxy.close();
      await database.drop();
    },
  };
}

/** WORKERS loops of transactions (two inserts with a query between) and plain reads, and their fates. */
function startWork(db: Database) {
  const fates = { committed: [] as number[], failed: 0, stuck: 0, unexpected: [] as unknown[] };
  let nextTx = 0;
  let running = true;
  async function once(worker: number, n: number) {
    const tx = nextTx++;
    const work = n % 3 === 2 ? db.sql`select ${worker}::int as w` : db.sql.begin(async (sql) => {
      await sql`insert into tx_parts values (${tx}, 1)`;
      await sql`select pg_sleep(0.002)`;
      await sql`insert into tx_parts values (${tx}, 2)`;
    }).then(() => fates.committed.push(tx));
    try {
      await withDeadline(Promise.resolve(work), SETTLE_MS, "unknown");
    } catch (error) {
      if (error instanceof Error && error.message.includes(`within ${SETTLE_MS} ms`)) fates.stuck++;
      else if (isDatabaseUnavailable(error)) fates.failed++;
      else fates.unexpected.push(error);
    }
  }
  const workers = Array.from({ length: WORKERS }, async (_, worker) => {
    for (let n = 0; running; n++) await once(worker, n);
  });
  return {
    fates,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

/** Every connection of the pool answers again within 5 s of the database's return. */
async function poolServesAgain(db: Database) {
  const back = performance.now();
  await Promise.all(Array.from({ length: 12 }, async () => {
    while (true) {
      try {
        return await withDeadline(Promise.resolve(db.sql`select 1`), 1_000, "unchanged");
      } catch {
        assert.ok(performance.now() - back < 5_000, "The pool did not serve again within 5 s");
        await sleep(100);
      }
    }
  }));
}

Deno.test({
  name: "driver faults: cut and refused connections fail only the work in flight; transactions stay whole",
  ignore: embedded, // The embedded PGlite runs in the process: there is no connection to cut.
  async fn() {
    const { direct, db, proxy, close } = await harness(6);
    try {
      const work = startWork(db);
      try {
        await sleep(500);
        const cutting = performance.now();
        while (performance.now() - cutting < CUTTING_MS) {
          proxy.cut();
          await sleep(CUT_EVERY_MS);
        }
        proxy.refuse();
        proxy.cut();
        await sleep(REFUSED_MS);
        proxy.accept();
        await poolServesAgain(db);
        await sleep(1_000);
      } finally {
        await work.stop();
      }
      const { committed, failed, stuck, unexpected } = work.fates;
      assert.deepEqual(unexpected.map(String), [], "Every failure is a classified database fault");
      assert.equal(stuck, 0, `${stuck} queries never settled: a pooled connection stopped answering`);
      assert.ok(failed > 0, "The faults failed some work in flight (else the test broke nothing)");
      assert.ok(committed.length > 0);
      const halves = await direct.sql`select tx from tx_parts group by tx having count(*) <> 2`;
      assert.deepEqual([...halves], [], "No transaction is half written");
      const [{ whole }] = await direct.sql<{ whole: number }[]>`
        select count(*)::int as whole from tx_parts where tx = any(${committed}::int[]) and part = 2`;
      assert.equal(whole, committed.length, "Every committed transaction is there");
    } finally {
      await close();
    }
  },
});

Deno.test({
  name: "driver faults: a transaction whose connection was lost sends nothing on the next session",
  ignore: embedded, // The embedded PGlite runs in the process: there is no connection to cut.
  async fn() {
    // One connection: after the cut, the pool opens it again for the next query, a new session.
    const { direct, db, proxy, close } = await harness(1);
    try {
      let firstWritten!: () => void;
      const written = new Promise<void>((resolve) => firstWritten = resolve);
      let reopen!: () => void;
      const reopened = new Promise<void>((resolve) => reopen = resolve);
      const outcome = db.sql.begin(async (sql) => {
        await sql`insert into tx_parts values (1, 1)`;
        firstWritten();
        await reopened;
        // The transaction is gone with its session: this must go nowhere, least of all autocommit.
        await sql`insert into tx_parts values (1, 2)`;
      }).then(() => "committed", (error) => error);
      await written;
      proxy.cut();
      // The next query reopens the pool's one connection.
      await eventuallyAnswers(db.sql);
      reopen();
      const error = await outcome;
      assert.ok(isDatabaseUnavailable(error), `The transaction failed as unavailable, got ${error}`);
      await eventuallyAnswers(db.sql);
      const rows = await direct.sql`select part from tx_parts where tx = 1`;
      assert.deepEqual([...rows], [], "Nothing of the lost transaction was written");
    } finally {
      await close();
    }
  },
});

async function eventuallyAnswers(sql: (strings: TemplateStringsArray) => PromiseLike<unknown>) {
  const deadline = performance.now() + SETTLE_MS;
  while (true) {
    try {
      return await withDeadline(Promise.resolve(sql`select 1`), 1_000, "unchanged");
    } catch (error) {
      if (performance.now() > deadline) throw error;
      await sleep(50);
    }
  }
}
