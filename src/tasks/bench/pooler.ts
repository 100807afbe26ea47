// BENCH_POOLER=pgbouncer: a second service on the bench's database, through PgBouncer in
// transaction mode (src/deploy/pgbouncer.ini, own ports) with DATABASE_POOLER=transaction, that
// takes the same rounds right after the direct one. PgBouncer's own CPU is not in the figures.
import { startPgBouncer } from "../pgbouncer.ts";
import type { BenchCluster } from "./cluster.ts";
import { type RunningService, startService } from "./service.ts";
import { log } from "./system.ts";

/** The pooler the bench can put in front of its cluster. */
export type BenchPooler = "pgbouncer";

export function benchPooler(raw: string | undefined): BenchPooler | undefined {
  if (!raw || raw === "none") return undefined;
  if (raw !== "pgbouncer") throw new Error(`Invalid BENCH_POOLER "${raw}": must be pgbouncer or none`);
  return raw;
}

/** Runs `work` against a service reaching `database` through PgBouncer; stops both whatever happens. */
export async function withPooledService<T>(
  cluster: BenchCluster,
  database: string,
  work: (service: RunningService) => Promise<T>,
): Promise<T> {
  const bouncer = await startPgBouncer({ serverPort: cluster.port });
  log(`PgBouncer on port ${bouncer.port} in front of the cluster (pool_mode = transaction)`);
  try {
    const service = await startService({
      DATABASE_URL: bouncer.url(database),
      DATABASE_DIRECT_URL: cluster.url(database),
      DATABASE_POOLER: "transaction",
    });
    try {
      return await work(service);
    } finally {
      await service.stop();
    }
  } finally {
    await bouncer.stop();
  }
}
