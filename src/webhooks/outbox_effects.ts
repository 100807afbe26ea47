// How decisions move outbox rows (table `webhook_deliveries`, outbox.ts): after an attempt (a retry
// planned, the row held or finished, with the body sent and the answer kept), when its owner sends
// it again, when a webhook pauses or resumes, and the record of a synchronous test send.
import type { Effect } from "../ledger/command.ts";
import type { EffectApplier } from "../ledger/pending_writes.ts";
import type { ClaimKey } from "./outbox.ts";
import { DELIVERY_RETENTION_MS } from "../../projections/delivery_retention_rules.ts";

/** Answers kept per delivery (the newest): bounds a row that is sent again and again. */
export const MAX_KEPT_RESPONSES = 50;

/** What one attempt leaves on its row: the body it sent and the start of the answer. */
export interface AttemptTrace {
  attemptId: string;
  sentBody?: string;
  excerpt?: string;
}

/**
 * After a failed attempt that will be retried: counts it and sets the next due time. A resumed row
 * keeps its place (the later ones wait for its retry) unless it is held again.
 */
export interface RescheduleDelivery extends Effect {
  type: "rescheduleDelivery";
  claim: ClaimKey;
  /** null: held until its paused webhook resumes. */
  at: Date | null;
  trace?: AttemptTrace;
}

/** After success or giving up: nothing more is planned; the row stays for its 7 days. */
export interface CompleteDelivery extends Effect {
  type: "completeDelivery";
  claim: ClaimKey;
  /** Absent when no attempt was made (the webhook was gone). */
  trace?: AttemptTrace;
}

/** Its owner sends it again: due now (held when its webhook is paused), any claim dropped. */
export interface RequeueDelivery extends Effect {
  type: "requeueDelivery";
  walletId: string;
  deliveryId: string;
  held: boolean;
}

/** A mailbox webhook paused: its waiting emails hold; resumed (or deleted): they are due at once. */
export interface HoldWebhookDeliveries extends Effect {
  type: "holdWebhookDeliveries";
  walletId: string;
  webhookId: string;
  hold: boolean;
}

/** The synchronous test send, kept like a finished delivery so it can be shown. */
export interface KeepTestDelivery extends Effect {
  type: "keepTestDelivery";
  walletId: string;
  deliveryId: string;
  webhookId: string;
  messageId: string;
  trace: AttemptTrace;
}

/** Sets `responses` to its newest entries after one more answer (SQL over the row's own column). */
function withResponse(tx: Parameters<EffectApplier["apply"]>[0], trace: AttemptTrace | undefined) {
  if (trace?.excerpt === undefined) return tx`responses`;
  const entry = tx.json([{ attemptId: trace.attemptId, excerpt: trace.excerpt }]);
  return tx`(
    select coalesce(jsonb_agg(e order by n), '[]'::jsonb)
    from jsonb_array_elements(responses || ${entry}::jsonb) with ordinality as t(e, n)
    where n > jsonb_array_length(responses) + 1 - ${MAX_KEPT_RESPONSES})`;
}

export const rescheduleDeliveries: EffectApplier<RescheduleDelivery> = {
  async apply(tx, effects) {
    for (const { claim, at, trace } of effects) {
      await tx`
        update webhook_deliveries
        set attempts = attempts + 1, next_attempt_at = ${at}, held = ${at === null}, locked_until = null,
            claim_token = null, resumed = resumed and ${at !== null}, sent_body = coalesce(${
        trace?.sentBody ?? null
      }, sent_body),
            responses = ${withResponse(tx, trace)}
        where wallet_id = ${claim.walletId} and id = ${claim.id} and claim_token = ${claim.claimToken}`;
    }
  },
};

export const completeDeliveries: EffectApplier<CompleteDelivery> = {
  async apply(tx, effects) {
    for (const { claim, trace } of effects) {
      await tx`
        update webhook_deliveries
        set attempts = attempts + ${trace ? 1 : 0}, next_attempt_at = null, held = false, locked_until = null,
            claim_token = null, resumed = false, sent_body = coalesce(${trace?.sentBody ?? null}, sent_body),
            responses = ${withResponse(tx, trace)}
        where wallet_id = ${claim.walletId} and id = ${claim.id} and claim_token = ${claim.claimToken}`;
    }
  },
};

/** `onDue` hears after the commit that deliveries became due (the delivery worker's wake-up). */
export function requeueDeliveries(onDue: () => void = () => {}): EffectApplier<RequeueDelivery> {
  return {
    async apply(tx, effects, now) {
      const rows = effects.map((e) => ({ wallet_id: e.walletId, id: e.deliveryId, held: e.held }));
      // An attempt in flight loses its claim: it is recorded, and this attempt comes after it.
      await tx`
        update webhook_deliveries d
        set next_attempt_at = case when x.held then null else ${now}::timestamptz end, held = x.held,
            locked_until = null, claim_token = null
        from jsonb_to_recordset(${tx.json(rows as never)}) as x(wallet_id text, id text, held boolean)
        where d.wallet_id = x.wallet_id and d.id = x.id and d.expires_at > ${now}`;
    },
    afterCommit: () => onDue(),
  };
}

export function holdWebhookDeliveries(onDue: () => void = () => {}): EffectApplier<HoldWebhookDeliveries> {
  return {
    async apply(tx, effects, now) {
      for (const { walletId, webhookId, hold } of effects) {
        if (hold) {
          // A row in flight stays claimed: its attempt's record holds it if it must wait.
          await tx`
            update webhook_deliveries set held = true, next_attempt_at = null, resumed = false
            where wallet_id = ${walletId} and webhook_id = ${webhookId} and kind = 'email'
              and next_attempt_at is not null`;
        } else {
          // Marked: they go one at a time, oldest first, the one in flight at the pause included
          // (held above with its claim kept), so the receiver gets them in creation order.
          await tx`
            update webhook_deliveries set held = false, next_attempt_at = ${now}, resumed = true
            where wallet_id = ${walletId} and webhook_id = ${webhookId} and held`;
        }
      }
    },
    afterCommit: (effects) => {
      if (effects.some((e) => !e.hold)) onDue();
    },
  };
}

export const keepTestDeliveries: EffectApplier<KeepTestDelivery> = {
  async apply(tx, effects, now) {
    const expiresAt = new Date(now.getTime() + DELIVERY_RETENTION_MS);
    for (const e of effects) {
      const responses = e.trace.excerpt === undefined
        ? []
        : [{ attemptId: e.trace.attemptId, excerpt: e.trace.excerpt }];
      await tx`
        insert into webhook_deliveries (wallet_id, id, webhook_id, kind, payload, message_id, cost, attempts,
                                        next_attempt_at, held, created_at, expires_at, sent_body, responses)
        values (${e.walletId}, ${e.deliveryId}, ${e.webhookId}, 'test', ${
        tx.json(parsedBody(e.trace.sentBody))
      },
                ${e.messageId}, 0, 1, null, false, ${now}, ${expiresAt}, ${e.trace.sentBody ?? null},
                ${tx.json(responses as never)})`;
    }
  },
};

/** The test's body as JSON; a body that never rendered is an empty object. */
function parsedBody(body: string | undefined): never {
  try {
    return (body === undefined ? {} : JSON.parse(body)) as never;
  } catch {
    return {} as never;
  }
}
