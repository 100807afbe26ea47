// How long deliveries are kept and how their tables are partitioned: the outbox, the delivery
// history projection and the recover command all read these, so they live apart from any of them.
import type { TimePartitioning } from "../db/partitions.ts";

/** Deliveries, tests included, are kept this long after they were queued (issue: 7 days). */
export const DELIVERY_RETENTION_MS = 7 * 24 * 3600 * 1000;
const HOUR_MS = 3600 * 1000;

/** Like the call logs: 12-hour partitions by expiry, a day ahead of the furthest new expiry. */
export const OUTBOX_PARTITIONING: TimePartitioning = {
  table: "webhook_deliveries",
  column: "expires_at",
  widthMs: 12 * HOUR_MS,
  aheadMs: DELIVERY_RETENTION_MS + 24 * HOUR_MS,
};
