// What one delivery attempt leaves, decided purely from the claimed delivery, the receiver's answer
// and whether the claim still holds the row: DeliveryAttempted (a call-log entry, moving no credits),
// DeliveryAbandoned when it gives up, and the row rescheduled or removed. An attempt made after the
// claim was lost is still a fact; only the holder of the claim moves the row.
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import type { UnbilledCommand } from "../ledger/command.ts";
import { read } from "../ledger/reads.ts";
import type { AttemptResult } from "./delivery_channel.ts";
import {
  type ClaimedDelivery,
  type ClaimKey,
  type CompleteDelivery,
  deliveryClaimRead,
  type RescheduleDelivery,
} from "./outbox.ts";
import { verdictAfter } from "./retry_policy.ts";

export interface AttemptFacts {
  delivery: ClaimedDelivery;
  /** The receiver's answer; undefined when the target no longer exists. */
  result: AttemptResult | undefined;
  /** The call log's path for the attempt. */
  logPath: string;
  attemptId: string;
  /** DELIVERY_RETRY_SCALE. */
  retryScale: number;
}

/** The kind events record: alerts of either channel are one kind there. */
function eventKind(delivery: ClaimedDelivery): "email" | "scheduled" | "alert" {
  return delivery.kind === "email" || delivery.kind === "scheduled" ? delivery.kind : "alert";
}

export function recordAttempt(facts: AttemptFacts) {
  const { delivery, result, logPath } = facts;
  const claim: ClaimKey = { walletId: delivery.walletId, id: delivery.id, claimToken: delivery.claimToken };
  const reads = { held: read(deliveryClaimRead, claim) };
  const complete: CompleteDelivery = { type: "completeDelivery", claim };
  const abandoned = (attempts: number, reason: string) =>
    newEvent("DeliveryAbandoned", {
      deliveryId: delivery.id,
      webhookId: logPath,
      kind: eventKind(delivery),
      attempts,
      reason,
    });
  const command: UnbilledCommand<void, typeof reads> = {
    walletId: delivery.walletId,
    reads,
    decide({ wallet, reads, now }) {
      const held = reads.held === true;
      if (!result) {
        return held
          ? {
            outcome: undefined,
            events: [abandoned(delivery.attempts, "webhook deleted")],
            effects: [complete],
          }
          : { outcome: undefined };
      }
      const attempt = delivery.attempts + 1;
      const verdict = verdictAfter(delivery.kind, attempt, result, now, facts.retryScale);
      const retry = held && verdict.action === "retry" ? verdict.at : undefined;
      const events: NewEvent[] = [newEvent("DeliveryAttempted", {
        attemptId: facts.attemptId,
        deliveryId: delivery.id,
        webhookId: logPath,
        kind: eventKind(delivery),
        messageId: delivery.messageId,
        attempt,
        ok: result.ok,
        ...(result.status !== undefined ? { status: result.status } : {}),
        ...(result.ok ? {} : { error: result.error }),
        latencyMs: result.latencyMs,
        cost: attempt === 1 ? delivery.cost : 0,
        balance: wallet?.balance ?? 0,
        ...(retry ? { nextAttemptAt: retry.toISOString() } : {}),
      })];
      if (!held) return { outcome: undefined, events };
      if (verdict.action === "abandon") events.push(abandoned(attempt, verdict.reason));
      const reschedule: RescheduleDelivery | undefined = retry &&
        { type: "rescheduleDelivery", claim, at: retry };
      return { outcome: undefined, events, effects: [reschedule ?? complete] };
    },
  };
  return command;
}
