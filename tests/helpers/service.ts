// Starts the real service as a subprocess on a fresh database, as a user would run it:
// a fresh Postgres database when DATABASE_URL is set, otherwise a fresh embedded data directory.
// With DATABASE_POOLER_URL too (the base URL of a transaction-mode PgBouncer in front of
// DATABASE_URL's server, with a `*` database entry), the service reaches that database through the
// pooler: DATABASE_URL = the pooler, DATABASE_DIRECT_URL = the server, DATABASE_POOLER=transaction.
import { freePort } from "../../src/net/free_port.ts";
import postgres from "postgres";
import type { OpenOptions } from "../../src/db/connect.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

export interface ServiceOptions {
  /** Extra environment for the service process. */
  env?: Record<string, string>;
  /** Reuse the database of another service (several instances on one database). */
  sharedWith?: Service;
  /** Open an SMTP port too. */
  smtp?: boolean;
  /** A database made for this service (freshDatabase with options); dropped with the service. */
  database?: FreshDatabase;
  /** Rewrites the service's DATABASE_URL (through a fault proxy); tasks keep the direct one. */
  routeDatabase?: (databaseUrl: string) => string;
}

export interface Service {
  url: string;
  port: number;
  smtpPort: number;
  env: Record<string, string>;
  /** The environment that points a task (audit, replay) at this service's database. */
  databaseEnv: Record<string, string>;
  output(): string;
  /** The service process's id (for /proc), while it runs. */
  pid(): number;
  /** SIGTERM and wait for a clean exit. */
  stop(): Promise<void>;
  /** SIGKILL: no chance to clean up. */
  kill(): Promise<void>;
  /** Start again on the same database and ports. */
  start(): Promise<void>;
  /** Stop and drop the database. */
  dispose(): Promise<void>;
}

export { freePort };

/**
 * The master key of every test database on Postgres, where the service refuses to start without one
 * (the embedded one makes its own in DATA_DIR). Part of the database's environment, so tasks
 * (replay, erase) and further instances on the database get it too.
 */
export const TEST_MASTER_KEY = "dGVzdCBtYXN0ZXIga2V5IG9mIHRoZSB0ZXN0IHN1aXQ=";

export interface FreshDatabase {
  /** The service's database variables. */
  env: Record<string, string>;
  drop: () => Promise<void>;
}

/**
 * A new database on the server of `base` (default DATABASE_URL; none: an embedded data directory),
 * reached through the transaction-mode pooler at `pooler` (default DATABASE_POOLER_URL) if any.
 */
export async function freshDatabase(
  options: { base?: string; pooler?: string } = {},
): Promise<FreshDatabase> {
  const base = options.base ?? Deno.env.get("DATABASE_URL");
  if (!base) {
    const dir = await Deno.makeTempDir({ prefix: "credit-api-test-" });
    return { env: { DATA_DIR: dir }, drop: () => Deno.remove(dir, { recursive: true }).catch(() => {}) };
  }
  const name = `test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const direct = databaseOn(base, name);
  const pooler = options.pooler ?? Deno.env.get("DATABASE_POOLER_URL");
  return {
    env: pooler
      ? {
        DATABASE_URL: databaseOn(pooler, name),
        DATABASE_DIRECT_URL: direct,
        DATABASE_POOLER: "transaction",
        MASTER_KEY: TEST_MASTER_KEY,
      }
      : { DATABASE_URL: direct, MASTER_KEY: TEST_MASTER_KEY },
    async drop() {
      const admin = postgres(base, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists ${name} with (force)`).catch(() => {});
      await admin.end();
    },
  };
}

/** `base` with its database replaced by `name`. */
export function databaseOn(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** How to open the database of a service environment the way the service does (pooler included). */
export function openOptionsOf(env: Record<string, string>): OpenOptions {
  return {
    databaseUrl: env.DATABASE_URL,
    directUrl: env.DATABASE_DIRECT_URL,
    pooler: env.DATABASE_POOLER === "transaction" ? "transaction" : "none",
    dataDir: env.DATA_DIR ?? "",
  };
}

export async function startService(options: ServiceOptions = {}): Promise<Service> {
  const db = options.sharedWith
    ? { env: options.sharedWith.databaseEnv, drop: async () => {} }
    : options.database ?? await freshDatabase();
  const port = freePort();
  const smtpPort = options.smtp ? freePort() : 0;
  const env: Record<string, string> = {
    PORT: String(port),
    HOSTNAME: "127.0.0.1",
    SMTP_PORT: String(smtpPort),
    TRUST_PROXY: "1",
    LOG_REQUESTS: "0",
    // Every event checked against its schema as it is appended: tests catch what the hot path skips.
    LEDGER_VALIDATE_EVENTS: "1",
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    ...db.env,
    ...options.env,
  };
  if (options.routeDatabase && db.env.DATABASE_URL) {
    env.DATABASE_URL = options.routeDatabase(db.env.DATABASE_URL);
  }
  let child: Deno.ChildProcess | undefined;
  let output = "";
  let pumping: Promise<void> = Promise.resolve();

  async function pump(stream: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    for await (const chunk of stream) output = (output + decoder.decode(chunk)).slice(-200_000);
  }

  async function start() {
    const env2 = { ...Deno.env.toObject(), ...env };
    if (!db.env.DATABASE_URL) delete env2.DATABASE_URL;
    // The test run's own variable, not the service's.
    delete env2.DATABASE_POOLER_URL;
    child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "src/main.ts"],
      cwd: ROOT,
      env: env2,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    pumping = Promise.all([pump(child.stdout), pump(child.stderr)]).then(() => {});
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        await res.body?.cancel();
        if (res.ok) return;
      } catch { /* not listening yet */ }
      const exited = await Promise.race([child.status, new Promise((r) => setTimeout(() => r(null), 100))]);
      if (exited) throw new Error(`Service exited during start-up:\n${output}`);
    }
    throw new Error(`Service did not start within 60 s:\n${output}`);
  }

  async function halt(signal: Deno.Signal) {
    if (!child) return;
    try {
      child.kill(signal);
    } catch { /* already gone */ }
    await child.status;
    await pumping;
    child = undefined;
  }

  await start();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    smtpPort,
    env,
    databaseEnv: db.env,
    output: () => output,
    pid: () => {
      if (!child) throw new Error("The service is not running");
      return child.pid;
    },
    stop: () => halt("SIGTERM"),
    kill: () => halt("SIGKILL"),
    start,
    async dispose() {
      await halt("SIGTERM");
      if (!options.sharedWith) await db.drop();
    },
  };
}

/** Runs a deno task (audit, replay) against a service's database; the embedded one must be stopped. */
export async function runTask(
  service: Service,
  task: "audit" | "replay" | "erase" | "rotate-master-key",
  args: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...Deno.env.toObject(), ...service.databaseEnv, ...extraEnv };
  if (!service.databaseEnv.DATABASE_URL) delete env.DATABASE_URL;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", task, ...args],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

export const embedded = !Deno.env.get("DATABASE_URL");

/** Runs the audit; on the embedded database the service is stopped first and started again after. */
export async function auditOf(service: Service): Promise<{ code: number; stdout: string; stderr: string }> {
  if (!embedded) return await runTask(service, "audit");
  await service.stop();
  try {
    return await runTask(service, "audit");
  } finally {
    await service.start();
  }
}

/** Runs the replay; on the embedded database the service is stopped first and started again after. */
export async function replayOf(service: Service): Promise<{ code: number; stdout: string; stderr: string }> {
  if (!embedded) return await runTask(service, "replay");
  await service.stop();
  try {
    return await runTask(service, "replay");
  } finally {
    await service.start();
  }
}
