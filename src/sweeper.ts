// Background clean-up of read-model rows that have expired: KV entries, call logs (deleted
// within 24 hours after their 7 days), remembered idempotent replies, attachments (7 days) and
// scoped keys revoked or expired more than 7 days ago.
import type { Sql } from "./db/connect.ts";
import type { Clock } from "./clock.ts";
import { sweepExpiredKv } from "../projections/kv.ts";
import { sweepExpiredCallLogs } from "../projections/call_logs.ts";
import { sweepExpiredReplies } from "../projections/idempotent_replies.ts";
import { sweepExpiredAttachments } from "./attachments/store.ts";
import { sweepRetiredKeys } from "../projections/scoped_keys.ts";
import { type PeriodicJob, startPeriodic } from "./periodic.ts";

export const SWEEP_INTERVAL_MS = 15 * 60 * 1000;

export async function sweepOnce(sql: Sql, now: Date) {
  return {
    kv: await sweepExpiredKv(sql, now),
    callLogs: await sweepExpiredCallLogs(sql, now),
    replies: await sweepExpiredReplies(sql, now),
    attachments: await sweepExpiredAttachments(sql, now),
    keys: await sweepRetiredKeys(sql, now),
  };
}

export function startSweeper(sql: Sql, clock: Clock, intervalMs = SWEEP_INTERVAL_MS): PeriodicJob {
  return startPeriodic("sweep", () => sweepOnce(sql, clock.now()), { intervalMs, firstAfterMs: 1000 });
}
