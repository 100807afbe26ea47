// A PostgreSQL cluster of its own for `deno task chaos`, made with Debian's postgresql-common on a
// spare port, so that stopping and restarting it harms no one else's database; drop() removes it.
import { freePort } from "../../net/free_port.ts";
import { removeClusterFolders } from "../bench/cluster.ts";

export interface Cluster {
  name: string;
  port: number;
  /** URL of the database the service runs on. */
  databaseUrl: string;
  start(): Promise<void>;
  /** A fast shutdown: sessions are ended (57P01), work in flight rolls back. */
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** Stops and removes the cluster and its files; safe to call more than once. */
  drop(): Promise<void>;
}

const PREFERRED_VERSION = "15";
const DATABASE = "chaos";

export async function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  const out = await new Deno.Command(command, { args, env, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) {
    throw new Error(`${command} ${args.join(" ")} failed (exit ${out.code}):\n${text.trim()}`);
  }
  return text;
}

/** Installs Debian's PostgreSQL packages when pg_createcluster is missing. */
async function ensurePostgres() {
  try {
    await run("which", ["pg_createcluster"]);
  } catch {
    console.log("installing postgresql from Debian's packages");
    await run("apt-get", ["update", "-qq"]);
    await run("apt-get", ["install", "-y", "-qq", "postgresql"], { DEBIAN_FRONTEND: "noninteractive" });
  }
}

async function installedVersion(): Promise<string> {
  const versions: string[] = [];
  for await (const entry of Deno.readDir("/usr/lib/postgresql")) {
    if (entry.isDirectory) versions.push(entry.name);
  }
  if (versions.includes(PREFERRED_VERSION)) return PREFERRED_VERSION;
  if (versions.length === 0) throw new Error("No PostgreSQL server is installed in /usr/lib/postgresql");
  return versions.sort((a, b) => Number(b) - Number(a))[0];
}

export async function createCluster(): Promise<Cluster> {
  await ensurePostgres();
  const version = await installedVersion();
  const name = `chaos_${Deno.pid}`;
  const port = freePort();
  const control = (action: string, ...more: string[]) =>
    run("pg_ctlcluster", ["--skip-systemctl-redirect", version, name, action, ...more]);
  let dropped = false;
  const cluster: Cluster = {
    name,
    port,
    databaseUrl: `postgres://postgres@127.0.0.1:${port}/${DATABASE}`,
    start: () => control("start").then(() => {}),
    stop: () => control("stop", "-m", "fast").then(() => {}),
    restart: () => control("restart", "-m", "fast").then(() => {}),
    async drop() {
      if (dropped) return;
      dropped = true;
      await run("pg_dropcluster", ["--stop", version, name]);
      await removeClusterFolders([
        `/etc/postgresql/${version}/${name}`,
        `/var/lib/postgresql/${version}/${name}`,
      ]);
    },
  };
  await run("pg_createcluster", [
    "-q",
    "--start-conf=manual",
    "-p",
    String(port),
    "-o",
    "max_connections=50",
    version,
    name,
    "--",
    "--auth-host=trust",
    "--auth-local=trust",
  ]);
  try {
    await cluster.start();
    await run("psql", [
      "-h",
      "127.0.0.1",
      "-p",
      String(port),
      "-U",
      "postgres",
      "-qc",
      `create database ${DATABASE}`,
    ]);
  } catch (error) {
    await cluster.drop().catch(() => {});
    throw error;
  }
  return cluster;
}
