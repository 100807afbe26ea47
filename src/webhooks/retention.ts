// Deliveries are kept 7 days (issue 13): the outbox rows with their payloads and the delivery
// history leave by whole time partitions, like the call logs, so retention never deletes row by
// row. A delivery still waiting when its partition goes (a webhook paused for a week) goes with it.
import type { Sql } from "../db/connect.ts";
import { createPartitions, maintainPartitions, type PartitionUpkeep } from "../db/partitions.ts";
import { OUTBOX_PARTITIONING } from "../../projections/delivery_retention_rules.ts";
import { HISTORY_PARTITIONING } from "../../projections/delivery_history.ts";

export const DELIVERY_PARTITIONINGS = [OUTBOX_PARTITIONING, HISTORY_PARTITIONING];

/** Creates the coming partitions of both tables and drops the expired ones. */
export async function sweepExpiredDeliveries(
  sql: Sql,
  now: Date,
): Promise<{ outbox: PartitionUpkeep; history: PartitionUpkeep }> {
  const [outbox, history] = await Promise.allSettled(
    DELIVERY_PARTITIONINGS.map((spec) => maintainPartitions(sql, spec, now)),
  );
  if (outbox.status === "rejected") throw outbox.reason;
  if (history.status === "rejected") throw history.reason;
  return { outbox: outbox.value, history: history.value };
}

/** The coming partitions of both tables; run at start-up so new rows find theirs at once. */
export async function prepareDeliveryPartitions(sql: Sql, now: Date): Promise<string[]> {
  const created: string[] = [];
  for (const spec of DELIVERY_PARTITIONINGS) created.push(...await createPartitions(sql, spec, now));
  return created;
}
