// Opens the database: real Postgres when DATABASE_URL is set, otherwise an embedded PGlite in
// DATA_DIR served over a local socket to the same postgres.js driver (one driver, one dialect).
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
}

export async function openDatabase(options: OpenOptions): Promise<Database> {
  if (options.databaseUrl) {
    const sql = postgres(options.databaseUrl, {
      max: options.maxConnections ?? 10,
      types,
      onnotice: () => {},
      connection: { application_name: "credit-api" },
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
