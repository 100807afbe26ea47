// The delivery outbox (table `webhook_deliveries`): what must be sent, and for 7 days what was. A
// row is written by the `queueDelivery` effect in the transaction of the fact that causes it (an
// accepted email, a fired run, an alert), so a delivery survives any crash after the commit;
// workers claim due rows with a lease (delivery_claims.ts), and the attempt's result moves the row
// in its own transaction (outbox_effects.ts). A finished row keeps its payload, the body last sent
// and the receivers' answers, so it can be shown and sent again, until its time partition is dropped.
import type { Queryable } from "../db/connect.ts";
import { DELIVERY_RETENTION_MS } from "../../projections/delivery_retention_rules.ts";
import { type ReadKind, rowId } from "../../projections/projection.ts";
import type { Effect } from "../ledger/command.ts";
import type { EffectApplier } from "../ledger/pending_writes.ts";
import type { EmailPayload, ScheduledRunPayload } from "./payloads.ts";
import type { AttachmentRef } from "../attachments/signed_link.ts";
import { randomId } from "../ids.ts";

/** Email and scheduled deliveries go to a webhook; alerts to the wallet's alert webhook or email. */
export type DeliveryKind = "email" | "scheduled" | "alert_webhook" | "alert_email";

/** An email as queued: attachments are references, their links are signed at each attempt. */
export type QueuedEmail = Omit<EmailPayload, "attachments"> & { attachments: AttachmentRef[] };

/** What is delivered: the kind decides the target, the retry policy and how the body is rendered. */
export type DeliveryContent =
  /** Rendered through the webhook's format at each attempt. */
  | { kind: "email"; webhookId: string; payload: QueuedEmail }
  /** Sent as is, once: the next run comes instead of a retry. */
  | { kind: "scheduled"; webhookId: string; payload: ScheduledRunPayload }
  /** A notice of the service to the wallet's alert target, retried like email. */
  | { kind: "alert_webhook" | "alert_email"; webhookId?: undefined; payload: Record<string, unknown> };

export type NewDelivery = DeliveryContent & {
  /** `dlv_` + random: the outbox row. */
  id: string;
  walletId: string;
  /** The `webhook-id` header, the same on every attempt. A run's is derived from its planned time. */
  messageId: string;
  /** Credits the cause was charged (2 or 5 for an email, 2 for a run); shown on the first attempt's log entry. */
  cost: number;
};

export type ClaimedDelivery = NewDelivery & {
  /** Attempts made before this claim. */
  attempts: number;
  claimToken: string;
};

export function newDeliveryId(): string {
  return `dlv_${randomId(24)}`;
}

export function newMessageId(): string {
  return `msg_${randomId(24)}`;
}

export interface QueueDelivery extends Effect {
  type: "queueDelivery";
  delivery: NewDelivery;
  /** Its webhook is paused: the row waits, with no attempt planned, until it resumes. */
  held?: boolean;
}

export function queueDelivery(delivery: NewDelivery, options: { held?: boolean } = {}): QueueDelivery {
  // The id is signed as "id.timestamp.body": a "." would make the signed content ambiguous.
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(delivery.messageId)) {
    throw new Error(`Invalid delivery message id "${delivery.messageId}"`);
  }
  if (!Number.isInteger(delivery.cost) || delivery.cost < 0) {
    throw new Error(`Invalid delivery cost ${delivery.cost}`);
  }
  return { type: "queueDelivery", delivery, ...(options.held ? { held: true } : {}) };
}

/** Inserts the queued rows, first attempt due at once; `onQueued` hears of them after the commit. */
export function queueDeliveries(onQueued: () => void = () => {}): EffectApplier<QueueDelivery> {
  return {
    async apply(tx, effects, now) {
      const rows = effects.map(({ delivery: d, held }) => ({
        wallet_id: d.walletId,
        id: d.id,
        webhook_id: d.webhookId ?? null,
        kind: d.kind,
        payload: d.payload,
        message_id: d.messageId,
        cost: d.cost,
        held: held === true,
      }));
      const expiresAt = new Date(now.getTime() + DELIVERY_RETENTION_MS);
      await tx`
        insert into webhook_deliveries (wallet_id, id, webhook_id, kind, payload, message_id, cost, next_attempt_at,
                                        held, created_at, expires_at)
        select x.wallet_id, x.id, x.webhook_id, x.kind, x.payload, x.message_id, x.cost,
               case when x.held then null else ${now}::timestamptz end, x.held, ${now}, ${expiresAt}
        from jsonb_to_recordset(${tx.json(rows as never)}) as x(
          wallet_id text, id text, webhook_id text, kind text, payload jsonb, message_id text, cost integer,
          held boolean)`;
    },
    afterCommit: () => onQueued(),
  };
}

export interface ClaimKey {
  walletId: string;
  id: string;
  claimToken: string;
}

/**
 * Whether a claim still holds its row, locked for the rest of the attempt's transaction; false when
 * the lease ran out and another instance took the row, which then owns it.
 */
export const deliveryClaimRead: ReadKind<ClaimKey, true> = {
  name: "delivery claim",
  id: (key) => rowId(["walletId", "id", "claimToken"], key),
  async load(sql: Queryable, keys) {
    const rows = await sql<ClaimKey[]>`
      select d.wallet_id as "walletId", d.id, d.claim_token as "claimToken"
      from unnest(${keys.map((k) => k.walletId)}::text[], ${keys.map((k) => k.id)}::text[],
                  ${keys.map((k) => k.claimToken)}::text[]) as x(w, id, t)
      cross join lateral (select * from webhook_deliveries e
                          where e.wallet_id = x.w and e.id = x.id and e.claim_token = x.t for update) d`;
    return new Map(rows.map((key) => [deliveryClaimRead.id(key), true as const]));
  },
  touches: () => [],
  evolve: (held) => held,
};
