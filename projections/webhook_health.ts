// The endpoint health read model: per webhook, whether it is paused (by its owner, or by the
// service when its endpoint kept failing) and the streak of failed attempts that decides the
// pause and the failure alert, and when its next recover may queue deliveries. Folded from the
// webhook events, the attempts of its email and scheduled deliveries, its refused runs (a wallet
// that cannot pay fails the run) and its recovers; a success ends a streak and its episode.
import type { StoredEvent } from "../events/catalogue.ts";
import { defineProjection, rowRead, walletRowsRead } from "./projection.ts";
import { touchedWebhookRow, type WebhookKey, webhookKeyRow } from "./webhooks.ts";

export interface WebhookHealthRow {
  wallet_id: string;
  webhook_id: string;
  /** null: sending. */
  paused_at: Date | null;
  paused_reason: string | null;
  /** Attempts failed in a row. */
  failures: number;
  /** The first failure of the streak. */
  failing_since: Date | null;
  last_status: number | null;
  last_error: string | null;
  /** The streak's alert went out: no other until a success (or a resume) ends the episode. */
  failing_alerted: boolean;
  /** A recover before this time queues nothing (429): recovers are paced per webhook. */
  recover_after: Date | null;
}

const COLUMNS = [
  "wallet_id",
  "webhook_id",
  "paused_at",
  "paused_reason",
  "failures",
  "failing_since",
  "last_status",
  "last_error",
  "failing_alerted",
  "recover_after",
] as const;

/** A webhook with no history: sending, no failures. */
export function healthyRow(walletId: string, webhookId: string): WebhookHealthRow {
  return {
    wallet_id: walletId,
    webhook_id: webhookId,
    paused_at: null,
    paused_reason: null,
    failures: 0,
    failing_since: null,
    last_status: null,
    last_error: null,
    failing_alerted: false,
    recover_after: null,
  };
}

/** Whether an event is an attempt that speaks for the endpoint's health (not an alert's). */
function endpointAttempt(event: StoredEvent): event is Extract<StoredEvent, { type: "DeliveryAttempted" }> {
  return event.type === "DeliveryAttempted" && event.data.kind !== "alert";
}

/**
 * Whether an event is a refused run that counts as a failed run: those with a status, written since
 * issue 21 (older refusals did not count, and their replay must not count them either).
 */
function refusedRun(event: StoredEvent): event is Extract<StoredEvent, { type: "ScheduleRunFailed" }> {
  return event.type === "ScheduleRunFailed" && event.data.status !== undefined;
}

/** Whether an event paces the webhook's recovers (the first delivery of a recover since issue 21). */
function pacedRecover(event: StoredEvent): event is Extract<StoredEvent, { type: "DeliveryRequeued" }> {
  return event.type === "DeliveryRequeued" && event.data.nextRecoverAt !== undefined;
}

function webhookIdOf(event: StoredEvent): string | null {
  switch (event.type) {
    case "WebhookCreated":
    case "WebhookUpdated":
    case "WebhookDeleted":
    case "WebhookPaused":
    case "WebhookResumed":
    case "WebhookFailing":
      return event.data.webhookId;
  }
  return endpointAttempt(event) || refusedRun(event) || pacedRecover(event) ? event.data.webhookId : null;
}

/** Pure fold step of the health model. A webhook from before the model gets its row at its first event. */
export function evolveHealth(
  row: WebhookHealthRow | undefined,
  event: StoredEvent,
): WebhookHealthRow | undefined {
  const webhookId = webhookIdOf(event);
  if (webhookId === null) return row;
  if (event.type === "WebhookCreated") return healthyRow(event.walletId, webhookId);
  if (event.type === "WebhookDeleted") return undefined;
  const current = row ?? healthyRow(event.walletId, webhookId);
  switch (event.type) {
    case "WebhookPaused":
      return { ...current, paused_at: event.recordedAt, paused_reason: event.data.reason };
    case "WebhookResumed":
      // Resuming starts afresh: the next pause needs a whole new streak. Recovers stay paced.
      return { ...healthyRow(event.walletId, webhookId), recover_after: current.recover_after };
    case "WebhookFailing":
      return { ...current, failing_alerted: true };
    case "DeliveryAttempted": {
      const d = event.data;
      if (d.ok) return { ...current, failures: 0, failing_since: null, failing_alerted: false };
      return {
        ...current,
        failures: current.failures + 1,
        failing_since: current.failing_since ?? new Date(d.at ?? event.recordedAt.toISOString()),
        last_status: d.status ?? null,
        last_error: d.error ?? null,
      };
    }
    case "ScheduleRunFailed": {
      const d = event.data;
      return {
        ...current,
        failures: current.failures + 1,
        failing_since: current.failing_since ?? new Date(d.executedAt),
        last_status: d.status ?? null,
        last_error: d.error,
      };
    }
    case "DeliveryRequeued": {
      const next = event.data.nextRecoverAt;
      return next === undefined ? current : { ...current, recover_after: new Date(next) };
    }
  }
  return current;
}

export const webhookHealthProjection = defineProjection<WebhookHealthRow>({
  table: "webhook_health",
  columns: COLUMNS,
  keyColumns: ["wallet_id", "webhook_id"],
  keyRow: (event) => touchedWebhookRow(event.walletId, webhookIdOf(event)),
  evolve: evolveHealth,
  readsPrevious: true,
  // A deactivated wallet's webhooks are gone (CONTRACT section 3).
  removedWithWallet: true,
});

/** One webhook's health as a ledger read (no row: a webhook from before the model, healthy). */
export const webhookHealthRead = rowRead<WebhookKey, WebhookHealthRow>(webhookHealthProjection, {
  name: "webhook health",
  keyRow: webhookKeyRow,
  async load(sql, keys) {
    return await sql<WebhookHealthRow[]>`
      select h.* from jsonb_to_recordset(${sql.json(keys as never)}) as x("walletId" text, "webhookId" text)
      join webhook_health h on h.wallet_id = x."walletId" and h.webhook_id = x."webhookId"`;
  },
});

/** All of a wallet's webhook health rows by webhook id, as a ledger read (the webhook list). */
export const walletHealthRead = walletRowsRead(webhookHealthProjection, {
  name: "wallet webhook health",
  async load(sql, walletIds) {
    return await sql<WebhookHealthRow[]>`select * from webhook_health where wallet_id = any(${walletIds})`;
  },
});
