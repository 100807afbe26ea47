// Wiring of the metrics: turns the recording on and opens the /metrics listener when METRICS_PORT
// is set, and plugs in the readings only main has (the pool and the outbox of its database).
import type { Config } from "./config.ts";
import type { Sql } from "./db/connect.ts";
import type { Clock } from "./clock.ts";
import { enableMetrics } from "./metrics/registry.ts";
import { startMetricsListener } from "./metrics/listener.ts";
import { type CommittedBatch, recordBatch } from "./metrics/ledger_metrics.ts";
import { type PoolState, watchPool } from "./metrics/database_metrics.ts";
import { watchOutbox } from "./metrics/delivery_metrics.ts";
import { readOutbox } from "./webhooks/mod.ts";
import { watchEventsBytes } from "./metrics/storage_metrics.ts";
import { eventsBytes } from "../events/size.ts";
import { log } from "./log.ts";

export interface ServiceMetrics {
  /** A committed ledger batch (the ledger's onBatch). */
  batch(timing: CommittedBatch): void;
  /** Reads the pool, the outbox and the size of the log of `sql` at scrape time. */
  watchDatabase(sql: Sql, clock: Clock): void;
  stop(): Promise<void>;
}

const OFF: ServiceMetrics = { batch: () => {}, watchDatabase: () => {}, stop: () => Promise.resolve() };

export async function startServiceMetrics(config: Config): Promise<ServiceMetrics> {
  if (!config.metrics) return OFF;
  enableMetrics();
  const listener = await startMetricsListener(config.metrics);
  log("info", "metrics listening", {
    url: `http://${config.metrics.hostname}:${listener.port}/metrics`,
    token: config.metrics.token !== undefined,
  });
  return {
    batch: recordBatch,
    watchDatabase(sql, clock) {
      const pool = sql as unknown as { poolState?: PoolState };
      if (pool.poolState) watchPool(() => pool.poolState!);
      watchOutbox(() => readOutbox(sql, clock.now()));
      watchEventsBytes(() => eventsBytes(sql));
    },
    stop: () => listener.stop(),
  };
}
