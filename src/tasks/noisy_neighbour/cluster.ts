// The noisy-neighbour task's own PostgreSQL 15 cluster: the bench's (a spare port, a known
// configuration), and a removal that leaves nothing behind, also when creation was interrupted:
// pg_dropcluster keeps a conf.d that still holds a file (the bench's settings), so its
// configuration folder is removed here too.
import { type BenchCluster, createCluster, ensureClusterTools, PG_VERSION } from "../bench/cluster.ts";
import { run } from "../bench/system.ts";

export type { BenchCluster };

/** The name the bench's createCluster gives the cluster of this process. */
export function clusterName(): string {
  return `bench_${Deno.pid}`;
}

export async function ownCluster(): Promise<BenchCluster> {
  await ensureClusterTools();
  return await createCluster({ profile: false });
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops and removes this process's cluster if there is one (made or half made), then whatever
 * pg_dropcluster left of it. Safe to call more than once and when no cluster was made.
 */
export async function removeCluster(): Promise<string[]> {
  const name = clusterName();
  const problems: string[] = [];
  const listed = await run("pg_lsclusters", ["--json"]).then((text) =>
    (JSON.parse(text) as { cluster: string; version: string | number }[])
      .some((c) => c.cluster === name && String(c.version) === PG_VERSION)
  ).catch(() => false);
  if (listed) {
    await run("pg_dropcluster", ["--stop", PG_VERSION, name]).catch(async (error) => {
      problems.push(String(error));
      // Its files go below in any case: the server must not be running on them.
      await run("pg_ctlcluster", [PG_VERSION, name, "stop", "-m", "immediate"]).catch(() => {});
    });
  }
  // Only this process's own folders, named after its pid.
  for (const path of [`/etc/postgresql/${PG_VERSION}/${name}`, `/var/lib/postgresql/${PG_VERSION}/${name}`]) {
    if (await exists(path)) {
      await Deno.remove(path, { recursive: true }).catch((error) => problems.push(`${path}: ${error}`));
    }
  }
  return problems;
}
