// The drill's PostgreSQL clusters, each made with Debian's pg_createcluster on a spare port and
// removed with its configuration and data folders: the source (archiving its WAL to pgBackRest) and
// the clusters a backup is restored into.
import postgres from "postgres";
import type { Sql } from "../../db/connect.ts";
import { freePort, run, sleep } from "../bench/system.ts";
import { PG_VERSION, removeClusterFolders } from "../bench/cluster.ts";
import { runAsPostgres } from "./pgbackrest.ts";

export const DATABASE = "drill";

export interface DrillCluster {
  name: string;
  port: number;
  pgdata: string;
  /** The server's log file (pg_createcluster's default). */
  logFile: string;
  url: string;
  /** Writes settings to conf.d/<file>.conf (values as postgresql.conf takes them, strings quoted). */
  configure(file: string, settings: Record<string, string>): Promise<void>;
  /** A pool of up to `max` connections to the drill's database. */
  connect(max?: number): Sql;
  start(): Promise<void>;
  /** A fast shutdown. */
  stop(): Promise<void>;
  /** Stops and removes the cluster and its folders; safe to call more than once. */
  drop(): Promise<void>;
}

/** int8 as numbers, as the service reads them. */
const types = {
  bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
};

/** A pool of up to `max` connections to a database, int8 read as numbers. */
export function connectUrl(url: string, max = 2): Sql {
  return postgres(url, { max, types, onnotice: () => {} }) as unknown as Sql;
}

/** A new cluster, not started, listening on 127.0.0.1 only. */
export async function createCluster(name: string): Promise<DrillCluster> {
  const port = freePort();
  await run("pg_createcluster", [
    "-q",
    "--start-conf=manual",
    "-p",
    String(port),
    PG_VERSION,
    name,
    "--",
    "--auth-host=trust",
    "--auth-local=trust",
  ]);
  const configDir = `/etc/postgresql/${PG_VERSION}/${name}`;
  const pgdata = `/var/lib/postgresql/${PG_VERSION}/${name}`;
  let dropped = false;
  const url = `postgres://postgres@127.0.0.1:${port}/${DATABASE}`;
  const cluster: DrillCluster = {
    name,
    port,
    pgdata,
    logFile: `/var/log/postgresql/postgresql-${PG_VERSION}-${name}.log`,
    url,
    async configure(file, settings) {
      await Deno.writeTextFile(
        `${configDir}/conf.d/${file}.conf`,
        Object.entries(settings).map(([key, value]) => `${key} = ${value}\n`).join(""),
      );
    },
    connect: (max = 2) => connectUrl(url, max),
    async start() {
      await run("pg_ctlcluster", ["--skip-systemctl-redirect", PG_VERSION, name, "start"]);
    },
    async stop() {
      await run("pg_ctlcluster", ["--skip-systemctl-redirect", PG_VERSION, name, "stop", "-m", "fast"]);
    },
    async drop() {
      if (dropped) return;
      dropped = true;
      await run("pg_dropcluster", ["--stop", PG_VERSION, name]).catch(() => {});
      await removeClusterFolders([configDir, pgdata, cluster.logFile]);
    },
  };
  try {
    await cluster.configure("drill", { listen_addresses: "'127.0.0.1'" });
  } catch (error) {
    await cluster.drop();
    throw error;
  }
  return cluster;
}

/** Quotes a string as a postgresql.conf value. */
export const confString = (value: string) => `'${value.replaceAll("'", "''")}'`;

/** Creates the drill's database on a started cluster. */
export async function createDatabase(cluster: DrillCluster) {
  await runAsPostgres("psql", ["-p", String(cluster.port), "-qc", `create database ${DATABASE}`]);
}

/** Empties a (stopped) cluster's data folder so that pgBackRest can restore into it. */
export async function emptyDataFolder(cluster: DrillCluster) {
  for await (const entry of Deno.readDir(cluster.pgdata)) {
    await Deno.remove(`${cluster.pgdata}/${entry.name}`, { recursive: true });
  }
}

/**
 * Waits until a restored cluster has ended recovery and been promoted (read-write), polling
 * pg_is_in_recovery(); fails after `timeoutMs`, or once `stopped()`.
 */
export async function waitForPromotion(cluster: DrillCluster, timeoutMs: number, stopped: () => boolean) {
  const deadline = performance.now() + timeoutMs;
  let last = "";
  while (performance.now() < deadline && !stopped()) {
    try {
      const out = await runAsPostgres("psql", [
        "-p",
        String(cluster.port),
        "-d",
        DATABASE,
        "-Atc",
        "select pg_is_in_recovery()",
      ]);
      if (out.trim() === "f") return;
      last = `still in recovery`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await sleep(100);
  }
  throw new Error(`Cluster ${cluster.name} was not promoted within ${timeoutMs / 1000} s (${last.trim()})`);
}
