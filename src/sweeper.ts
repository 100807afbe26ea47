// Background clean-up of read-model rows that have expired: KV entries, remembered idempotent
// replies and scoped keys revoked or expired more than 7 days ago row by row; call logs and
// attachments by dropping whole expired time partitions (and creating the coming ones), so their
// cost does not grow with the tables. Deliveries leave by partitions too, in a sweep of their own
// (webhooks/retention.ts).
import type { Sql } from "./db/connect.ts";
import type { Clock } from "./clock.ts";
import { sweepExpiredKv } from "../projections/kv.ts";
import { CALL_LOG_PARTITIONING, sweepExpiredCallLogs } from "../projections/call_logs.ts";
import { sweepExpiredReplies } from "../projections/idempotent_replies.ts";
import {
  ATTACHMENT_PARTITIONING,
  ATTACHMENT_USAGE_PARTITIONING,
  sweepExpiredAttachments,
} from "./attachments/store.ts";
import { sweepRetiredKeys } from "../projections/scoped_keys.ts";
import { createPartitions } from "./db/partitions.ts";
import { type PeriodicJob, startPeriodic } from "./periodic.ts";
import { prepareDeliveryPartitions, sweepExpiredDeliveries } from "./webhooks/mod.ts";

export const SWEEP_INTERVAL_MS = 15 * 60 * 1000;

/**
 * One sweep of every table. A step that fails (a partition drop that timed out on its lock) does
 * not keep the others from running; the failures are thrown together at the end.
 */
export async function sweepOnce(sql: Sql, now: Date) {
  const failures: unknown[] = [];
  const step = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      failures.push(error);
      return undefined as T;
    }
  };
  const swept = {
    kv: await step(() => sweepExpiredKv(sql, now)),
    callLogs: await step(() => sweepExpiredCallLogs(sql, now)),
    replies: await step(() => sweepExpiredReplies(sql, now)),
    attachments: await step(() => sweepExpiredAttachments(sql, now)),
    keys: await step(() => sweepRetiredKeys(sql, now)),
  };
  if (failures.length) {
    const reasons = failures.map((e) => e instanceof Error ? e.message : String(e));
    throw new AggregateError(
      failures,
      `Sweep failed in ${failures.length} of ${Object.keys(swept).length} steps: ${reasons.join("; ")}`,
    );
  }
  return swept;
}

/** Creates the coming time partitions; run at start-up so that new rows find theirs at once. */
export async function preparePartitions(sql: Sql, now: Date): Promise<string[]> {
  return [
    ...await createPartitions(sql, CALL_LOG_PARTITIONING, now),
    ...await createPartitions(sql, ATTACHMENT_PARTITIONING, now),
    ...await createPartitions(sql, ATTACHMENT_USAGE_PARTITIONING, now),
    ...await prepareDeliveryPartitions(sql, now),
  ];
}

export function startSweeper(sql: Sql, clock: Clock, intervalMs = SWEEP_INTERVAL_MS): PeriodicJob {
  const tables = startPeriodic("sweep", () => sweepOnce(sql, clock.now()), {
    intervalMs,
    firstAfterMs: 1000,
  });
  const deliveries = startPeriodic("delivery sweep", () => sweepExpiredDeliveries(sql, clock.now()), {
    intervalMs,
    firstAfterMs: 1500,
  });
  return { stop: async () => void await Promise.all([tables.stop(), deliveries.stop()]) };
}
