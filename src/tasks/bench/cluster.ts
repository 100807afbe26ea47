// The bench's own PostgreSQL 15 cluster on a spare port, created for the run and removed after:
// a known configuration (synchronous_commit on, pg_stat_statements when profiling), CPU time that
// belongs to this run alone, and the shared cluster left alone.
import postgres from "postgres";
import type { Sql } from "../../db/connect.ts";
import { freePort, log, run } from "./system.ts";

export const PG_VERSION = "15";

export interface BenchCluster {
  name: string;
  port: number;
  postmasterPid: number;
  /** A connection string for one of the cluster's databases. */
  url(database: string): string;
  createDatabase(name: string): Promise<string>;
  connect(database: string, max?: number): Sql;
  drop(): Promise<void>;
}

/** int8 as numbers, as the service reads them. */
const types = {
  bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
};

/**
 * Settings of the bench's cluster, beyond the defaults of a fresh cluster. Autovacuum stays on, as
 * in production: the service rewrites wallet and KV rows all the time, and without it their tables
 * bloat within a run and the load measures the bloat.
 */
function clusterSettings(profile: boolean): Record<string, string> {
  return {
    listen_addresses: "'127.0.0.1'",
    synchronous_commit: "on",
    fsync: "on",
    autovacuum: "on",
    max_connections: "200",
    ...(profile
      ? { shared_preload_libraries: "'pg_stat_statements'", "pg_stat_statements.track": "top" }
      : {}),
  };
}

export async function createCluster(options: { profile: boolean }): Promise<BenchCluster> {
  const name = `bench_${Deno.pid}`;
  const port = freePort();
  await run("pg_createcluster", [PG_VERSION, name, "--port", String(port), "--", "--auth=trust"]);
  const info = JSON.parse(await run("pg_lsclusters", ["--json"])) as {
    cluster: string;
    pgdata: string;
    configdir: string;
  }[];
  const cluster = info.find((c) => c.cluster === name);
  if (!cluster) throw new Error(`Cluster "${name}" is not listed by pg_lsclusters after its creation`);
  const settings = clusterSettings(options.profile);
  // conf.d is included by the cluster's postgresql.conf; values are written quoted as they must be.
  await Deno.writeTextFile(
    `${cluster.configdir}/conf.d/bench.conf`,
    Object.entries(settings).map(([key, value]) => `${key} = ${value}\n`).join(""),
  );
  await run("pg_ctlcluster", [PG_VERSION, name, "start"]);
  const postmasterPid = Number((await Deno.readTextFile(`${cluster.pgdata}/postmaster.pid`)).split("\n")[0]);
  log(
    `own cluster: PostgreSQL ${PG_VERSION} "${name}" on port ${port} (` +
      Object.entries(settings).map(([key, value]) => `${key}=${value.replaceAll("'", "")}`).join(", ") + ")",
  );

  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const connect = (database: string, max = 2) =>
    postgres(url(database), { max, types, onnotice: () => {} }) as unknown as Sql;
  return {
    name,
    port,
    postmasterPid,
    url,
    connect,
    async createDatabase(database) {
      const admin = connect("postgres", 1);
      await admin.unsafe(`create database ${database}`);
      await admin.end();
      return url(database);
    },
    async drop() {
      await run("pg_dropcluster", ["--stop", PG_VERSION, name]);
      await removeClusterFolders([cluster.configdir, cluster.pgdata]);
    },
  };
}

/**
 * Removes what pg_dropcluster leaves of a dropped cluster: it deletes only the files it made, so
 * a configuration folder that holds another (the bench's conf.d/bench.conf) stays behind.
 */
export async function removeClusterFolders(folders: string[]): Promise<void> {
  for (const folder of folders) {
    await Deno.remove(folder, { recursive: true }).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }
}

/** Whether the Debian tools for a cluster of our own are there; installs them if not. */
export async function ensureClusterTools() {
  try {
    await run("which", ["pg_createcluster"]);
    await run("test", ["-x", `/usr/lib/postgresql/${PG_VERSION}/bin/postgres`]);
  } catch {
    log(`installing postgresql-${PG_VERSION} from Debian's packages`);
    await run("apt-get", ["update", "-qq"]);
    await run("apt-get", ["install", "-y", "-qq", `postgresql-${PG_VERSION}`, "postgresql-contrib"], {
      DEBIAN_FRONTEND: "noninteractive",
    });
  }
}
