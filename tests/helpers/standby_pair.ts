// A primary and a synchronous physical standby of our own on spare ports, built the way the
// PostgreSQL documentation does by hand: pg_createcluster for each, pg_basebackup -R for the
// standby, synchronous_standby_names on the primary once the standby streams. For the failover
// test; `deno task ha` builds its pair with pg_auto_failover instead. drop() removes both.
import { run } from "../../src/tasks/chaos/cluster.ts";
import { ensureClusterTools, PG_VERSION, removeClusterFolders } from "../../src/tasks/bench/cluster.ts";
import { freePort } from "../../src/net/free_port.ts";

export interface Node {
  name: string;
  port: number;
  pgdata: string;
  /** Stops the node hard: no checkpoint, sessions cut (as a lost machine, but its disk stays). */
  crash(): Promise<void>;
  promote(): Promise<void>;
}

export interface StandbyPair {
  primary: Node;
  standby: Node;
  /** The service's URL: both hosts, the writable one wanted. */
  databaseUrl: string;
  /** Stops and removes both clusters and their files; safe to call more than once. */
  drop(): Promise<void>;
}

const STANDBY_NAME = "standby1";

/** A psql command on a node; returns its output (unaligned, tuples only). */
export function psql(port: number, database: string, command: string): Promise<string> {
  return run("psql", [
    "-h",
    "127.0.0.1",
    "-p",
    String(port),
    "-U",
    "postgres",
    "-d",
    database,
    "-Atqc",
    command,
  ]);
}

function node(name: string, port: number): Node {
  const control = (...args: string[]) =>
    run("pg_ctlcluster", ["--skip-systemctl-redirect", PG_VERSION, name, ...args]).then(() => {});
  return {
    name,
    port,
    pgdata: `/var/lib/postgresql/${PG_VERSION}/${name}`,
    crash: () => control("stop", "-m", "immediate"),
    promote: () => control("promote"),
  };
}

async function create(name: string, port: number) {
  await run("pg_createcluster", [
    "-q",
    "--start-conf=manual",
    "-p",
    String(port),
    "-o",
    "max_connections=50",
    PG_VERSION,
    name,
    "--",
    "--auth-host=trust",
    "--auth-local=trust",
  ]);
}

/** Waits until `check` resolves true, polling; throws past `withinMs`. */
async function until(what: string, withinMs: number, check: () => Promise<boolean>) {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what}: not within ${withinMs} ms`);
}

export async function createStandbyPair(database: string): Promise<StandbyPair> {
  await ensureClusterTools();
  const suffix = `${Deno.pid}_${Math.random().toString(36).slice(2, 6)}`;
  const primary = node(`hap_${suffix}`, freePort());
  const standby = node(`has_${suffix}`, freePort());
  const created: Node[] = [];
  let dropped = false;
  const pair: StandbyPair = {
    primary,
    standby,
    databaseUrl:
      `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/${database}?target_session_attrs=read-write`,
    async drop() {
      if (dropped) return;
      dropped = true;
      for (const n of created) {
        await run("pg_dropcluster", ["--stop", PG_VERSION, n.name]).catch(() => {});
        await removeClusterFolders([`/etc/postgresql/${PG_VERSION}/${n.name}`, n.pgdata]);
      }
    },
  };
  try {
    created.push(primary);
    await create(primary.name, primary.port);
    await run("pg_ctlcluster", ["--skip-systemctl-redirect", PG_VERSION, primary.name, "start"]);
    await psql(primary.port, "postgres", `create database ${database}`);

    created.push(standby);
    await create(standby.name, standby.port);
    // The standby's data directory is the primary's, copied; -R writes primary_conninfo and
    // standby.signal, naming the standby for synchronous_standby_names.
    await Deno.remove(standby.pgdata, { recursive: true });
    await run("pg_basebackup", [
      "-d",
      `host=127.0.0.1 port=${primary.port} user=postgres application_name=${STANDBY_NAME}`,
      "-D",
      standby.pgdata,
      "-R",
      "-X",
      "stream",
      "-c",
      "fast",
    ]);
    await run("chown", ["-R", "postgres:postgres", standby.pgdata]);
    await run("chmod", ["700", standby.pgdata]);
    await run("pg_ctlcluster", ["--skip-systemctl-redirect", PG_VERSION, standby.name, "start"]);
    await until(
      "the standby streams",
      30_000,
      async () =>
        (await psql(
          primary.port,
          "postgres",
          `select count(*) from pg_stat_replication where application_name = '${STANDBY_NAME}' and state = 'streaming'`,
        )).trim() === "1",
    );
    // From now on a commit is acknowledged only once the standby has it (synchronous_commit=on).
    await psql(primary.port, "postgres", `alter system set synchronous_standby_names = '${STANDBY_NAME}'`);
    await psql(primary.port, "postgres", "select pg_reload_conf()");
    await until(
      "the standby is synchronous",
      10_000,
      async () =>
        (await psql(
          primary.port,
          "postgres",
          `select sync_state from pg_stat_replication where application_name = '${STANDBY_NAME}'`,
        )).trim() === "sync",
    );
  } catch (error) {
    await pair.drop().catch(() => {});
    throw error;
  }
  return pair;
}
