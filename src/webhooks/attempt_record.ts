// What one delivery attempt leaves, decided purely from the claimed delivery, the receiver's answer,
// whether the claim still holds the row, and the webhook's configuration and health:
// DeliveryAttempted (a call-log entry, moving no credits), DeliveryAbandoned when it gives up, what
// the endpoint's health adds (endpoint_health.ts), and the row rescheduled, held or finished with
// the body sent and the answer kept. An attempt made after the claim was lost is still a fact;
// only the holder of the claim moves the row. An erased wallet's lost claim leaves nothing.
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import type { Effect, UnbilledCommand } from "../ledger/command.ts";
import { read } from "../ledger/reads.ts";
import { webhookRead } from "../../projections/webhooks.ts";
import { webhookHealthRead } from "../../projections/webhook_health.ts";
import type { AttemptResult } from "./delivery_channel.ts";
import { type ClaimedDelivery, type ClaimKey, deliveryClaimRead } from "./outbox.ts";
import type { AttemptTrace, CompleteDelivery, RescheduleDelivery } from "./outbox_effects.ts";
import { abandonCause, verdictAfter } from "./retry_policy.ts";
import {
  type AlertIds,
  DEFAULT_HEALTH_RULES,
  healthAfterFailure,
  type HealthRules,
} from "./endpoint_health.ts";

export interface AttemptFacts {
  delivery: ClaimedDelivery;
  /** The receiver's answer; undefined when the target no longer exists. */
  result: AttemptResult | undefined;
  /** The call log's path for the attempt. */
  logPath: string;
  attemptId: string;
  /** When the attempt started (recorded with it; without it, the record's time stands for it). */
  at?: Date;
  /** DELIVERY_RETRY_SCALE. */
  retryScale: number;
  /** When a failing endpoint pauses its webhook. */
  rules?: HealthRules;
  /** Ids of the alerts the attempt may queue; without them none is queued. */
  alertIds?: AlertIds;
}

/** The kind events record: alerts of either channel are one kind there. */
function eventKind(delivery: ClaimedDelivery): "email" | "scheduled" | "alert" {
  return delivery.kind === "email" || delivery.kind === "scheduled" ? delivery.kind : "alert";
}

/** The fact of the attempt; `retry` is the next attempt planned, `waits` that it waits for a resume. */
function attemptedEvent(
  facts: AttemptFacts & { result: AttemptResult },
  balance: number,
  plan: { retry?: Date; waits: boolean },
): NewEvent {
  const { delivery, result } = facts;
  const attempt = delivery.attempts + 1;
  return newEvent("DeliveryAttempted", {
    attemptId: facts.attemptId,
    deliveryId: delivery.id,
    webhookId: facts.logPath,
    kind: eventKind(delivery),
    messageId: delivery.messageId,
    attempt,
    ok: result.ok,
    ...(result.status !== undefined ? { status: result.status } : {}),
    ...(result.ok ? {} : { error: result.error }),
    latencyMs: result.latencyMs,
    cost: attempt === 1 ? delivery.cost : 0,
    balance,
    ...(plan.retry && !plan.waits ? { nextAttemptAt: plan.retry.toISOString() } : {}),
    ...(facts.at ? { at: facts.at.toISOString() } : {}),
    ...(plan.waits ? { held: true } : {}),
  });
}

/** What the row keeps of the attempt: the body sent and the answer, when there are any. */
function traceOf(facts: AttemptFacts & { result: AttemptResult }): { trace?: AttemptTrace } {
  const { result } = facts;
  const kept = {
    ...(result.sentBody !== undefined ? { sentBody: result.sentBody } : {}),
    ...(result.excerpt !== undefined ? { excerpt: result.excerpt } : {}),
  };
  return Object.keys(kept).length ? { trace: { attemptId: facts.attemptId, ...kept } } : {};
}

type Reads = ReturnType<typeof attemptReads>;

function attemptReads(delivery: ClaimedDelivery, claim: ClaimKey) {
  // Alerts have no webhook: their key names none ("" is never a webhook id), so nothing is loaded.
  const target = {
    walletId: delivery.walletId,
    webhookId: eventKind(delivery) === "alert" ? "" : delivery.webhookId ?? "",
  };
  return {
    held: read(deliveryClaimRead, claim),
    webhook: read(webhookRead, target),
    health: read(webhookHealthRead, target),
  };
}

/** What a failed attempt of a webhook's delivery adds for the endpoint's health. */
function healthAfter(facts: AttemptFacts, state: Parameters<UnbilledCommand<void, Reads>["decide"]>[0]) {
  const { delivery, result } = facts;
  if (!result || result.ok || eventKind(delivery) === "alert") return undefined;
  return healthAfterFailure({
    walletId: delivery.walletId,
    wallet: state.wallet,
    webhook: state.reads.webhook,
    health: state.reads.health,
    ...(result.status !== undefined ? { status: result.status } : {}),
    error: result.error,
    at: facts.at ?? state.now,
    now: state.now,
    rules: facts.rules ?? DEFAULT_HEALTH_RULES,
    ...(facts.alertIds ? { alertIds: facts.alertIds } : {}),
  });
}

export function recordAttempt(facts: AttemptFacts): UnbilledCommand<void, Reads> {
  const { delivery, result, logPath } = facts;
  const claim: ClaimKey = { walletId: delivery.walletId, id: delivery.id, claimToken: delivery.claimToken };
  // "webhook deleted" says its cause itself.
  const abandoned = (attempts: number, reason: string, cause?: ReturnType<typeof abandonCause>) =>
    newEvent("DeliveryAbandoned", {
      deliveryId: delivery.id,
      webhookId: logPath,
      kind: eventKind(delivery),
      attempts,
      reason,
      ...(cause ? { cause } : {}),
    });
  return {
    walletId: delivery.walletId,
    reads: attemptReads(delivery, claim),
    decide(state) {
      const { wallet, reads, now } = state;
      const held = reads.held === true;
      // The claim was lost to an erasure (or a deactivation): the wallet's rows are gone and stay
      // gone, so an attempt that was in flight then leaves no call-log or history row behind.
      if (!held && wallet?.deactivated_at) return { outcome: undefined };
      if (!result) {
        if (!held) return { outcome: undefined };
        const complete: CompleteDelivery = { type: "completeDelivery", claim };
        return {
          outcome: undefined,
          events: [abandoned(delivery.attempts, "webhook deleted")],
          effects: [complete],
        };
      }
      const attempt = delivery.attempts + 1;
      const verdict = verdictAfter(delivery.kind, { attempt, result, now, scale: facts.retryScale });
      const health = healthAfter(facts, state);
      // An email of a paused mailbox webhook waits for the resume instead of its retry.
      const paused = delivery.kind === "email" && reads.webhook?.mode === "mailbox" &&
        (reads.health?.paused_at != null || health?.pausedMailbox === true);
      const retry = held && verdict.action === "retry" ? verdict.at : undefined;
      const waits = retry !== undefined && paused;
      const events = [attemptedEvent({ ...facts, result }, wallet?.balance ?? 0, { retry, waits })];
      if (!held) return { outcome: undefined, events };
      if (verdict.action === "abandon") {
        events.push(abandoned(attempt, verdict.reason, abandonCause(delivery.kind, attempt, result)));
      }
      events.push(...health?.events ?? []);
      const trace = traceOf({ ...facts, result });
      const moved: RescheduleDelivery | CompleteDelivery = retry
        ? { type: "rescheduleDelivery", claim, at: waits ? null : retry, ...trace }
        : { type: "completeDelivery", claim, ...trace };
      const effects: Effect[] = [moved, ...health?.effects ?? []];
      return { outcome: undefined, events, effects };
    },
  };
}
