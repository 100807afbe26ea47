// The Debian packages `deno task ha` runs on, installed when missing: PostgreSQL's cluster tools,
// pg_auto_failover (pg_autoctl, and its monitor extension for PostgreSQL 15), HAProxy.
import { ensureClusterTools, PG_VERSION } from "../bench/cluster.ts";
import { ensureTool } from "../bench/system.ts";
import { ensureHaproxy } from "../cluster/haproxy.ts";
import { run } from "../chaos/cluster.ts";

/** PostgreSQL's binaries; pg_autoctl takes the version's pg_ctl from here. */
export const PG_BIN = `/usr/lib/postgresql/${PG_VERSION}/bin`;
const EXTENSION_CONTROL = `/usr/share/postgresql/${PG_VERSION}/extension/pgautofailover.control`;

/** Installs what is missing; returns HAProxy's and pg_autoctl's versions. */
export async function ensureHaTools(): Promise<string> {
  await ensureClusterTools();
  await ensureTool("pg_autoctl", "pg-auto-failover-cli");
  try {
    await Deno.stat(EXTENSION_CONTROL);
  } catch {
    await run("apt-get", ["install", "-y", "-qq", `postgresql-${PG_VERSION}-auto-failover`], {
      DEBIAN_FRONTEND: "noninteractive",
    });
  }
  const haproxy = await ensureHaproxy();
  const autoctl = (await run("pg_autoctl", ["--version"])).split("\n")[0];
  return `${haproxy.split(" - ")[0]}; ${autoctl}`;
}
