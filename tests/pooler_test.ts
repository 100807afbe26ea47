// The service through PgBouncer in transaction mode, in every run of the suite (embedded and
// Postgres alike): a PgBouncer of its own, configured from src/deploy/pgbouncer.ini, in front of
// the local PostgreSQL. Billed calls keep their invariants through it, the audit passes through it,
// and the service leaves no session state on the server connections it shares with other clients.
import assert from "node:assert/strict";
import postgres from "postgres";
import { hasPgBouncer, type RunningPgBouncer, startPgBouncer } from "../src/tasks/pgbouncer.ts";
import { freshDatabase, runTask, startService } from "./helpers/service.ts";
import { newToken, walletClient } from "./helpers/client.ts";

/** The PostgreSQL the suite uses, or the local one that .ci/run starts for the embedded run too. */
const SERVER = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/postgres";
const CALLS = 150;
const PROBES = 8;

const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn });

async function pgbouncer(): Promise<RunningPgBouncer> {
  if (!await hasPgBouncer()) {
    throw new Error(
      "pgbouncer is not installed: apt-get install pgbouncer (.ci/run installs it), then run this test again",
    );
  }
  return await startPgBouncer({ serverPort: Number(new URL(SERVER).port || 5432) });
}

/**
 * Names of the prepared statements left on the server connections PgBouncer lends for `url`:
 * PROBES transactions held open together, so that each sees another server connection.
 */
async function preparedOnServers(url: string): Promise<string[]> {
  const probe = postgres(url, { max: PROBES, prepare: false, onnotice: () => {} });
  try {
    const seen = await Promise.all(
      Array.from({ length: PROBES }, () =>
        probe.begin(async (tx) => {
          await tx.unsafe("select pg_sleep(0.2)");
          return (await tx.unsafe("select name from pg_prepared_statements")).map((r) => r.name as string);
        })),
    );
    return [...new Set(seen.flat())];
  } finally {
    await probe.end();
  }
}

/** Server connections PgBouncer holds to `database` (its admin console speaks the simple protocol only). */
async function pooledServers(bouncer: RunningPgBouncer, database: string): Promise<number> {
  const admin = postgres(bouncer.url("pgbouncer"), { max: 1, fetch_types: false, onnotice: () => {} });
  try {
    const rows = await admin.unsafe("show servers");
    return rows.filter((r) => r.database === database).length;
  } finally {
    await admin.end();
  }
}

test("the service through PgBouncer in transaction mode: exact charges, a clean audit, no session state", async () => {
  const bouncer = await pgbouncer();
  const database = await freshDatabase({ base: SERVER, pooler: bouncer.url("postgres") });
  const name = new URL(database.env.DATABASE_URL).pathname.slice(1);
  const service = await startService({ database });
  try {
    assert.equal(service.env.DATABASE_POOLER, "transaction");
    assert.equal(new URL(service.env.DATABASE_URL).port, String(bouncer.port));
    const wallet = walletClient(service, await newToken(service));
    // More concurrent billed calls than server connections, on 100 credits: exactly 100 served.
    const answers = await Promise.all(
      Array.from({ length: CALLS }, (_, i) => wallet.post(`/kv/pooled/k${i}`, `v${i}`)),
    );
    const statuses = answers.map((a) => a.status);
    assert.equal(statuses.filter((s) => s === 200).length, 100, `statuses: ${statuses.join(",")}`);
    assert.equal(statuses.filter((s) => s === 402).length, CALLS - 100);
    const spent = await wallet.get("/token");
    assert.equal(spent.status, 402);
    assert.equal(spent.balance, 0);
    assert.ok(await pooledServers(bouncer, name) >= 1, "the billed calls went through PgBouncer");

    const audit = await runTask(service, "audit");
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);

    assert.deepEqual(await preparedOnServers(service.env.DATABASE_URL), []);
    // The probe can see what a driver that prepares leaves behind on a pooled connection.
    const preparing = postgres(service.env.DATABASE_URL, { max: 1, onnotice: () => {} });
    await preparing`select ${1}::int as one`;
    await preparing.end();
    assert.notDeepEqual(await preparedOnServers(service.env.DATABASE_URL), []);
    assert.doesNotMatch(service.output(), /prepared statement|"level":"error"/);
  } finally {
    await service.dispose();
    await bouncer.stop();
  }
});
