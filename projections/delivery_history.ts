// The delivery history read model: each email, scheduled-run and test delivery of a webhook with
// its status and attempts, folded from the delivery events and kept 7 days, then dropped with its
// time partition. The payload and the receivers' answers stay beside it in the outbox row
// (src/webhooks/outbox.ts): bulky and third-party, they never enter the permanent log.
import { ABANDON_CAUSES, type EventData, type StoredEvent } from "../events/catalogue.ts";
import { defineProjection } from "./projection.ts";
import { runMessageId } from "./schedules.ts";
import { DELIVERY_RETENTION_MS, OUTBOX_PARTITIONING } from "./delivery_retention_rules.ts";
import type { TimePartitioning } from "../src/db/partitions.ts";

/** Like the outbox it describes: 12-hour partitions by expiry. */
export const HISTORY_PARTITIONING: TimePartitioning = { ...OUTBOX_PARTITIONING, table: "delivery_history" };

/** Attempts a delivery shows (the newest): bounds a delivery sent again and again. */
export const MAX_ATTEMPTS_SHOWN = 50;

/** What the log says of a delivery; `paused` is not among them: it is a pending one of a paused webhook. */
export type StoredStatus = "pending" | "delivered" | "failed" | "abandoned";
export type HistoryKind = "email" | "scheduled" | "test";

export interface AttemptEntry {
  attemptId: string;
  at: string;
  /** null: no answer (a network error or a timeout). */
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

export interface DeliveryHistoryRow {
  wallet_id: string;
  /** The outbox row (`dlv_...`). */
  delivery_id: string;
  webhook_id: string;
  kind: HistoryKind;
  /** The `webhook-id` header; null only for mail recorded before it was written down, until its first attempt. */
  message_id: string | null;
  created_at: Date;
  status: StoredStatus;
  attempts: AttemptEntry[];
  next_attempt_at: Date | null;
  expires_at: Date;
}

const COLUMNS = [
  "wallet_id",
  "delivery_id",
  "webhook_id",
  "kind",
  "message_id",
  "created_at",
  "status",
  "attempts",
  "next_attempt_at",
  "expires_at",
] as const;

function fresh(event: StoredEvent, fields: Pick<DeliveryHistoryRow, "delivery_id" | "webhook_id" | "kind">) {
  return {
    wallet_id: event.walletId,
    ...fields,
    created_at: event.recordedAt,
    expires_at: new Date(event.recordedAt.getTime() + DELIVERY_RETENTION_MS),
  };
}

/** A given-up delivery is `abandoned` after its retries or when its webhook went, else `failed`. */
export function abandonedStatus(data: EventData<"DeliveryAbandoned">): StoredStatus {
  const cause = data.cause ??
    (data.reason.startsWith("gave up")
      ? ABANDON_CAUSES[0]
      : data.reason === "webhook deleted"
      ? ABANDON_CAUSES[3]
      : ABANDON_CAUSES[1]);
  return cause === "retries exhausted" || cause === "webhook deleted" ? "abandoned" : "failed";
}

function attempted(row: DeliveryHistoryRow, event: Extract<StoredEvent, { type: "DeliveryAttempted" }>) {
  const d = event.data;
  const attempt: AttemptEntry = {
    attemptId: d.attemptId,
    at: d.at ?? event.recordedAt.toISOString(),
    statusCode: d.status ?? null,
    latencyMs: d.latencyMs,
    error: d.ok ? null : d.error ?? null,
  };
  const status: StoredStatus = d.ok ? "delivered" : d.nextAttemptAt || d.held ? "pending" : "failed";
  return {
    ...row,
    message_id: row.message_id ?? d.messageId,
    status,
    attempts: [...row.attempts, attempt].slice(-MAX_ATTEMPTS_SHOWN),
    next_attempt_at: d.nextAttemptAt ? new Date(d.nextAttemptAt) : null,
  };
}

/** Pure fold step of the delivery history. */
export function evolveDelivery(
  row: DeliveryHistoryRow | undefined,
  event: StoredEvent,
): DeliveryHistoryRow | undefined {
  switch (event.type) {
    case "EmailReceived": {
      const d = event.data;
      const ids = { delivery_id: d.deliveryId, webhook_id: d.webhookId, kind: "email" as const };
      const message = d.webhookMessageId ?? null;
      const at = event.recordedAt;
      return {
        ...fresh(event, ids),
        message_id: message,
        status: "pending",
        attempts: [],
        next_attempt_at: at,
      };
    }
    case "ScheduleFired": {
      const d = event.data;
      const ids = { delivery_id: d.deliveryId, webhook_id: d.webhookId, kind: "scheduled" as const };
      // A run's webhook-id follows from its planned time.
      const message = runMessageId(d.webhookId, new Date(d.plannedAt));
      const at = event.recordedAt;
      return {
        ...fresh(event, ids),
        message_id: message,
        status: "pending",
        attempts: [],
        next_attempt_at: at,
      };
    }
    case "WebhookTested": {
      const d = event.data;
      const ids = { delivery_id: d.deliveryId, webhook_id: d.webhookId, kind: "test" as const };
      const attempt: AttemptEntry = {
        attemptId: d.deliveryId,
        at: d.at,
        statusCode: d.status ?? null,
        latencyMs: d.latencyMs,
        error: d.ok ? null : d.error ?? null,
      };
      const status = d.ok ? "delivered" : "failed";
      return {
        ...fresh(event, ids),
        message_id: d.messageId,
        status,
        attempts: [attempt],
        next_attempt_at: null,
      };
    }
  }
  // Deliveries from before the history, and alerts, have no row: their events change nothing here.
  if (!row) return undefined;
  switch (event.type) {
    case "DeliveryAttempted":
      return attempted(row, event);
    case "DeliveryAbandoned":
      return { ...row, status: abandonedStatus(event.data), next_attempt_at: null };
    case "DeliveryRequeued":
      return {
        ...row,
        message_id: row.message_id ?? event.data.messageId,
        status: "pending",
        next_attempt_at: event.recordedAt,
      };
  }
  return row;
}

function deliveryIdOf(event: StoredEvent): string | null {
  switch (event.type) {
    case "EmailReceived":
    case "ScheduleFired":
    case "WebhookTested":
    case "DeliveryRequeued":
      return event.data.deliveryId;
    case "DeliveryAttempted":
    case "DeliveryAbandoned":
      return event.data.kind === "alert" ? null : event.data.deliveryId;
  }
  return null;
}

export const deliveryHistoryProjection = defineProjection<DeliveryHistoryRow>({
  table: "delivery_history",
  columns: COLUMNS,
  keyColumns: ["wallet_id", "delivery_id"],
  keyRow(event) {
    const deliveryId = deliveryIdOf(event);
    return deliveryId === null ? null : { wallet_id: event.walletId, delivery_id: deliveryId };
  },
  evolve: evolveDelivery,
  // The table is partitioned by expiry, which every unique index must hold; a row's never changes.
  conflictColumns: ["wallet_id", "delivery_id", "expires_at"],
  readsPrevious: true,
  liveFilter: "expires_at > now()",
  // A deactivated wallet's webhooks are gone (CONTRACT section 3), and so is what they were sent.
  removedWithWallet: true,
});
