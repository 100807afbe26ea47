// Opens the database: real Postgres when DATABASE_URL is set, otherwise an embedded PGlite in
// DATA_DIR served over a local socket to the same postgres.js driver (one driver, one dialect).
// "postgres" is this project's patched copy of postgres.js (src/db/postgres_js), which survives lost
// connections; connections that fail are opened again on demand, quickly. It is a local ES module
// mapped in deno.json, not an npm link: Deno copies a linked package into node_modules at every
// start, which races with the processes loading it.
import postgres from "postgres";

export type Sql = postgres.Sql<{ bigint: number }>;
export type Tx = postgres.TransactionSql<{ bigint: number }>;
/** Anything queries can run on: the pool or an open transaction. */
export type Queryable = Sql | Tx;

export interface Database {
  sql: Sql;
  /** True when this process hosts the embedded PGlite (a single connection, no LISTEN). */
  embedded: boolean;
  close(): Promise<void>;
}

// int8 as JS numbers: balances and positions stay far below 2^53.
const types = {
  bigint: {
    to: 20,
    from: [20],
    serialize: (x: number) => String(x),
    parse: (x: string) => Number(x),
  },
};

export interface OpenOptions {
  databaseUrl?: string;
  dataDir: string;
  maxConnections?: number;
  /** Longest a new connection may take to open (default DEFAULT_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/**
 * The wait before a connection that failed is tried again, in seconds, by failures in a row: short
 * and bounded, so that a database back after an outage is in use again within half a second (the
 * driver's own default grows to 20 s).
 */
const RECONNECT_MAX_SECONDS = 0.5;
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(RECONNECT_MAX_SECONDS, 0.05 * 2 ** failures);
}

export async function openDatabase(options: OpenOptions): Promise<Database> {
  if (options.databaseUrl) {
    const sql = postgres(options.databaseUrl, {
      max: options.maxConnections ?? 10,
      types,
      onnotice: () => {},
      connection: { application_name: "credit-api" },
      connect_timeout: (options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS) / 1000,
      backoff: reconnectDelaySeconds,
    }) as unknown as Sql;
    return { sql, embedded: false, close: () => sql.end({ timeout: 5 }) };
  }
  return await openEmbedded(options.dataDir);
}

async function openEmbedded(dataDir: string): Promise<Database> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  await Deno.mkdir(dataDir, { recursive: true });
  const lock = await lockDataDir(dataDir);
  const db = await PGlite.create({ dataDir: `${dataDir}/pglite` });
  const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1" });
  await server.start();
  const port = (server as unknown as { server: { address(): { port: number } } }).server.address().port;
  // PGlite is one backend: a single client connection keeps transactions from interleaving.
  const sql = postgres({
    host: "127.0.0.1",
    port,
    user: "postgres",
    database: "postgres",
    max: 1,
    types,
    onnotice: () => {},
  }) as unknown as Sql;
  return {
    sql,
    embedded: true,
    async close() {
      await sql.end({ timeout: 5 });
      await server.stop();
      await db.close();
      await lock.release();
    },
  };
}

/**
 * PGlite has no lock of its own: two processes opening one data directory would corrupt it.
 * An exclusive advisory file lock refuses the second one; the OS drops it when the owner dies.
 */
async function lockDataDir(dataDir: string): Promise<{ release(): Promise<void> }> {
  const file = await Deno.open(`${dataDir}/embedded.lock`, { create: true, write: true });
  const timedOut = Symbol("timeout");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    file.lock(true),
    new Promise<symbol>((resolve) => timer = setTimeout(() => resolve(timedOut), 500)),
  ]);
  clearTimeout(timer);
  if (outcome === timedOut) {
    throw new Error(`The embedded database in ${dataDir} is in use by another process`);
  }
  await file.truncate(0);
  await file.write(new TextEncoder().encode(String(Deno.pid)));
  return {
    async release() {
      await file.unlock().catch(() => {});
      file.close();
    },
  };
}
