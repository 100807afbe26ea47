// Opens the database: real Postgres when DATABASE_URL is set, otherwise an embedded PGlite in
// DATA_DIR served to the same postgres.js driver through an in-process socket (one driver, one dialect).
// "postgres" is this project's patched copy of postgres.js (src/db/vendor/postgres_js), which survives lost
// connections; connections that fail are opened again on demand, quickly. It is a local ES module
// mapped in deno.json, not an npm link: Deno copies a linked package into node_modules at every
// start, which races with the processes loading it.
import postgres from "postgres";

export type Sql = postgres.Sql<{ bigint: number }>;
export type Tx = postgres.TransactionSql<{ bigint: number }>;
/** Anything queries can run on: the pool or an open transaction. */
export type Queryable = Sql | Tx;

export interface Database {
  /** The pool every request, worker and task uses (through the pooler when there is one). */
  sql: Sql;
  /**
   * A small pool of sessions straight to Postgres (DATABASE_DIRECT_URL), for what needs one:
   * migrations today. Without DATABASE_DIRECT_URL it is `sql` itself.
   */
  direct: Sql;
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

/** `transaction`: DATABASE_URL is a transaction-mode pooler (PgBouncer); see `openDatabase`. */
export type PoolerMode = "none" | "transaction";

export interface OpenOptions {
  databaseUrl?: string;
  /** Straight to Postgres, past the pooler; default `databaseUrl`. */
  directUrl?: string;
  pooler?: PoolerMode;
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

/** Sessions straight to Postgres: migrations hold one transaction each; two are plenty. */
const DIRECT_MAX_CONNECTIONS = 2;
/** A direct connection left idle this long is closed: it holds a server slot the pooler would share. */
const DIRECT_IDLE_SECONDS = 30;

/**
 * Behind a transaction-mode pooler each transaction (or lone statement) may run on another server
 * connection, so nothing may outlive one: no named prepared statements (`prepare: false`; the
 * driver sends unnamed ones), no session settings, no session advisory locks, no LISTEN. The
 * service only takes `pg_advisory_xact_lock` and `set local`, which end with their transaction, and
 * its leases are rows (`locked_until`, `claimed_until`), so the same code runs either way.
 */
export async function openDatabase(options: OpenOptions): Promise<Database> {
  if (!options.databaseUrl) return await openEmbedded(options.dataDir);
  const connectTimeout = (options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS) / 1000;
  const open = (url: string, max: number, pooled: boolean, idleSeconds?: number) =>
    postgres(url, {
      ...sessionAttrs(url),
      max,
      types,
      prepare: !pooled,
      onnotice: () => {},
      connection: { application_name: "credit-api" },
      connect_timeout: connectTimeout,
      backoff: reconnectDelaySeconds,
      ...(idleSeconds ? { idle_timeout: idleSeconds } : {}),
    }) as unknown as Sql;
  const sql = open(options.databaseUrl, options.maxConnections ?? 10, options.pooler === "transaction");
  if (!options.directUrl || options.directUrl === options.databaseUrl) {
    return { sql, direct: sql, embedded: false, close: () => sql.end({ timeout: 5 }) };
  }
  const direct = open(options.directUrl, DIRECT_MAX_CONNECTIONS, false, DIRECT_IDLE_SECONDS);
  return {
    sql,
    direct,
    embedded: false,
    close: async () => {
      await Promise.all([sql.end({ timeout: 5 }), direct.end({ timeout: 5 })]);
    },
  };
}

/**
 * The driver's `target_session_attrs`, for a URL that names one. libpq's `read-write` refuses a
 * server in hot standby or with default_transaction_read_only on; the driver's checks only the
 * latter, which a standby reports `off`, so a connection opened while only the standby is up
 * stayed on it and every write failed there (25006). `primary` is the driver's test of hot standby
 * (in_hot_standby, which the server also reports when it is promoted); a primary set read-only by
 * default is still refused call by call, as 25006, which faults.ts counts as unavailability.
 * Exported for the unit test.
 */
export function sessionAttrs(url: string): { target_session_attrs?: "primary" } {
  const query = url.indexOf("?");
  if (query < 0) return {};
  const attrs = new URLSearchParams(url.slice(query + 1).split("#")[0]).get("target_session_attrs");
  if (attrs === "read-write") return { target_session_attrs: "primary" };
  return {};
}

async function openEmbedded(dataDir: string): Promise<Database> {
  const { createInWorker, openPglite } = await import("./embedded_pglite.ts");
  const { pgliteSocketFactory } = await import("./pglite_socket.ts");
  await Deno.mkdir(dataDir, { recursive: true });
  const lock = await lockDataDir(dataDir);
  const pgDataDir = `${dataDir}/pglite`;
  if (!await exists(`${pgDataDir}/PG_VERSION`)) await createInWorker(pgDataDir);
  const db = await openPglite(pgDataDir);
  // postgres.js takes a factory of net.Socket-like objects (`socket`), which its types do not list.
  const socket: object = { socket: pgliteSocketFactory(db) };
  // PGlite is one backend: a single client connection keeps transactions from interleaving.
  const sql = postgres({
    ...socket,
    user: "postgres",
    database: "postgres",
    max: 1,
    types,
    onnotice: () => {},
  }) as unknown as Sql;
  return {
    sql,
    direct: sql,
    embedded: true,
    async close() {
      await sql.end({ timeout: 5 });
      await db.close();
      await lock.release();
    },
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
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
