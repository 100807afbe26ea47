// How long deliveries are kept and how their tables are partitioned: the outbox, the delivery
// history projection and the recover command all read these, so they live apart from any of them.
import { expiryPartitioning } from "../src/db/partitions.ts";

/** Deliveries, tests included, are kept this long after they were queued (issue: 7 days). */
export const DELIVERY_RETENTION_MS = 7 * 24 * 3600 * 1000;

export const OUTBOX_PARTITIONING = expiryPartitioning("webhook_deliveries", DELIVERY_RETENTION_MS);
