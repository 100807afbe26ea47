// The delivery outbox (table `webhook_deliveries`): what must still be POSTed to a webhook. A row is
// written in the same transaction as the fact that causes it (an accepted email, a fired run), so a
// delivery survives any crash after the commit; workers claim due rows with a lease.
import type { Queryable, Sql } from "../db/connect.ts";
import type { EmailPayload, ScheduledRunPayload } from "./payloads.ts";
import type { AttachmentRef } from "../attachments/signed_link.ts";
import { randomId } from "../ids.ts";

export type DeliveryKind = "email" | "scheduled" | "alert";

/** An email as queued: attachments are references, their links are signed at each attempt. */
export type QueuedEmail = Omit<EmailPayload, "attachments"> & { attachments: AttachmentRef[] };

/** What is delivered: the kind decides the retry policy and how the body is rendered. */
export type DeliveryContent =
  /** Rendered through the webhook's format at each attempt. */
  | { kind: "email"; payload: QueuedEmail }
  /** Sent as is, once: the next run comes instead of a retry. */
  | { kind: "scheduled"; payload: ScheduledRunPayload }
  /** Any JSON notice of the service (such as a low balance), sent as is, retried like email. */
  | { kind: "alert"; payload: Record<string, unknown> };

export type DeliveryRequest = DeliveryContent & {
  walletId: string;
  webhookId: string;
  /** Credits the cause was charged (2 or 5 for an email, 2 for a run); shown on the first attempt's log entry. */
  cost: number;
  /** The transaction's time; the first attempt is due at once. */
  now: Date;
  /** The `webhook-id` header; default a fresh `msg_...`. A run passes one derived from its planned time. */
  messageId?: string;
};

export type ClaimedDelivery = DeliveryContent & {
  walletId: string;
  id: string;
  webhookId: string;
  messageId: string;
  cost: number;
  /** Attempts made before this claim. */
  attempts: number;
  claimToken: string;
};

const wakeListeners = new Set<() => void>();

/** Calls `listener` whenever this process enqueues a delivery; returns the unsubscribe function. */
export function onDeliveryEnqueued(listener: () => void): () => void {
  wakeListeners.add(listener);
  return () => wakeListeners.delete(listener);
}

/**
 * Queues a delivery inside the caller's transaction (a ledger `decide`, or any transaction that
 * appends the causing event) and returns its id. Nothing is sent before that transaction commits.
 */
export async function enqueueDelivery(tx: Queryable, request: DeliveryRequest): Promise<string> {
  const id = `dlv_${randomId(24)}`;
  const messageId = request.messageId ?? `msg_${randomId(24)}`;
  // The id is signed as "id.timestamp.body": a "." would make the signed content ambiguous.
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(messageId)) {
    throw new Error(`Invalid delivery message id "${messageId}"`);
  }
  if (!Number.isInteger(request.cost) || request.cost < 0) {
    throw new Error(`Invalid delivery cost ${request.cost}`);
  }
  await tx`
    insert into webhook_deliveries (wallet_id, id, webhook_id, kind, payload, message_id, cost, next_attempt_at,
                                    created_at)
    values (${request.walletId}, ${id}, ${request.webhookId}, ${request.kind},
            ${tx.json(request.payload as never)}, ${messageId}, ${request.cost}, ${request.now},
            ${request.now})`;
  for (const listener of wakeListeners) listener();
  return id;
}

interface DeliveryRow {
  wallet_id: string;
  id: string;
  webhook_id: string;
  kind: DeliveryKind;
  payload: unknown;
  message_id: string;
  cost: number;
  attempts: number;
  claim_token: string;
}

/**
 * Claims up to `limit` due deliveries for `leaseMs`. SKIP LOCKED lets several instances claim at
 * once without waiting on or taking each other's rows; the lease keeps a claimed row away from them
 * afterwards, and hands it to another instance if this one dies before recording the attempt.
 */
export async function claimDueDeliveries(
  sql: Sql,
  options: { now: Date; limit: number; leaseMs: number },
): Promise<ClaimedDelivery[]> {
  const { now, limit, leaseMs } = options;
  const token = randomId(20);
  const rows = await sql<DeliveryRow[]>`
    with due as (
      select wallet_id, id from webhook_deliveries
      where next_attempt_at <= ${now} and (locked_until is null or locked_until <= ${now})
      order by next_attempt_at
      limit ${limit}
      for update skip locked)
    update webhook_deliveries d
    set locked_until = ${new Date(now.getTime() + leaseMs)}, claim_token = ${token}
    from due where d.wallet_id = due.wallet_id and d.id = due.id
    returning d.wallet_id, d.id, d.webhook_id, d.kind, d.payload, d.message_id, d.cost, d.attempts, d.claim_token`;
  return rows.map((row) =>
    ({
      walletId: row.wallet_id,
      id: row.id,
      webhookId: row.webhook_id,
      kind: row.kind,
      payload: row.payload,
      messageId: row.message_id,
      cost: row.cost,
      attempts: row.attempts,
      claimToken: row.claim_token,
    }) as ClaimedDelivery
  );
}

/**
 * After a failed attempt that will be retried: counts it and sets the next due time. False when the
 * claim was lost (the lease ran out and another instance took the row), which then owns it.
 */
export async function rescheduleDelivery(
  tx: Queryable,
  delivery: ClaimedDelivery,
  nextAttemptAt: Date,
): Promise<boolean> {
  const rows = await tx`
    update webhook_deliveries
    set attempts = attempts + 1, next_attempt_at = ${nextAttemptAt}, locked_until = null, claim_token = null
    where wallet_id = ${delivery.walletId} and id = ${delivery.id} and claim_token = ${delivery.claimToken}
    returning 1`;
  return rows.length === 1;
}

/** After success or giving up: the delivery leaves the outbox. False when the claim was lost. */
export async function completeDelivery(tx: Queryable, delivery: ClaimedDelivery): Promise<boolean> {
  const rows = await tx`
    delete from webhook_deliveries
    where wallet_id = ${delivery.walletId} and id = ${delivery.id} and claim_token = ${delivery.claimToken}
    returning 1`;
  return rows.length === 1;
}

/** Hands a claimed row back untouched, so it is due again at once (used on shutdown). */
export async function releaseDelivery(sql: Queryable, delivery: ClaimedDelivery): Promise<void> {
  await sql`
    update webhook_deliveries set locked_until = null, claim_token = null
    where wallet_id = ${delivery.walletId} and id = ${delivery.id} and claim_token = ${delivery.claimToken}`;
}
