// The delivery worker, one per instance: claims due outbox rows, POSTs each once, and records the
// attempt (DeliveryAttempted, and DeliveryAbandoned when it gives up) in the same transaction that
// reschedules or removes the row. Delivery is at least once: a crash between the POST and that
// commit repeats the POST after the lease, with the same `webhook-id` so receivers can deduplicate.
import type { Sql } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Clock } from "../clock.ts";
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import { findWebhook } from "../../projections/webhooks.ts";
import { randomId } from "../ids.ts";
import type { PostResult } from "./http_post.ts";
import {
  claimDueDeliveries,
  type ClaimedDelivery,
  completeDelivery,
  onDeliveryEnqueued,
  rescheduleDelivery,
} from "./outbox.ts";
import { type LinkSigning, postToWebhook, renderDeliveryBody } from "./deliver.ts";
import { verdictAfter } from "./retry_policy.ts";
import { ALERT_EMAIL_ID, type LowBalancePayload } from "../wallets/low_balance.ts";
import { findAlertEmail, findAlertWebhook } from "../wallets/alert_target.ts";
import { type AlertMailer, createAlertMailer } from "../wallets/alert_mailer.ts";
import { describeError, logError } from "../log.ts";
import { createBackoff } from "../backoff.ts";

export interface DeliveryWorkerOptions {
  sql: Sql;
  ledger: Ledger;
  clock: Clock;
  signing: LinkSigning;
  allowPrivate: boolean;
  /** DELIVERY_RETRY_SCALE: multiplies the retry waits. */
  retryScale: number;
  /** How often the outbox is polled for due rows; enqueues in this process also wake the worker. */
  pollMs?: number;
  /** Most attempts in flight at once in this instance; a slow receiver holds only its own slot. */
  maxInFlight?: number;
  /** How long a claim keeps other instances away: well past the 10 s timeout plus the recording. */
  leaseMs?: number;
  /** Sends low-balance alert emails; without one they are recorded as not sent. */
  mailer?: AlertMailer;
}

export interface DeliveryWorker {
  /** Look for due rows now. */
  wake(): void;
  /** Stops claiming and waits for the attempts in flight to be recorded. */
  stop(): Promise<void>;
}

export const DEFAULT_POLL_MS = 500;
const DEFAULT_MAX_IN_FLIGHT = 32;
const DEFAULT_LEASE_MS = 60_000;
// A wake-up comes from inside the enqueuing transaction; on a pooled database the claim may run
// before that commit, so one more look shortly after catches the row.
const WAKE_RECHECK_MS = 100;

export function startDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let recheck: ReturnType<typeof setTimeout> | undefined;
  let claiming: Promise<void> | undefined;
  let again = false;
  // While the database is out, polls come less often and the outage is logged once.
  const backoff = createBackoff("delivery poll");

  // Claims as many due rows as there are free slots and starts their attempts without waiting for
  // them; each finished attempt frees a slot and looks again.
  async function claim() {
    while (!stopping && inFlight.size < maxInFlight) {
      const claimed = await claimDueDeliveries(options.sql, {
        now: options.clock.now(),
        limit: maxInFlight - inFlight.size,
        leaseMs,
      });
      if (claimed.length === 0) return;
      for (const delivery of claimed) {
        const attempt: Promise<void> = attemptDelivery(options, delivery)
          .catch((error) =>
            // The lease runs out and another claim retries it; nothing is lost.
            logError("delivery attempt not recorded", error, { deliveryId: delivery.id })
          )
          .finally(() => {
            inFlight.delete(attempt);
            tick();
          });
        inFlight.add(attempt);
      }
    }
  }

  function tick() {
    if (stopping) return;
    if (claiming) {
      again = true;
      return;
    }
    clearTimeout(timer);
    claiming = claim()
      .then(() => backoff.succeeded(), (error) => backoff.failed(error))
      .finally(() => {
        claiming = undefined;
        if (stopping) return;
        timer = setTimeout(tick, again ? 0 : backoff.delay(pollMs));
        again = false;
      });
  }

  function wake() {
    tick();
    clearTimeout(recheck);
    recheck = setTimeout(tick, WAKE_RECHECK_MS);
  }

  const unsubscribe = onDeliveryEnqueued(wake);
  timer = setTimeout(tick, 0);
  return {
    wake,
    async stop() {
      stopping = true;
      unsubscribe();
      clearTimeout(timer);
      clearTimeout(recheck);
      await claiming;
      await Promise.all(inFlight);
    },
  };
}

/** One attempt of one claimed delivery, recorded through the ledger. */
export async function attemptDelivery(
  options: DeliveryWorkerOptions,
  delivery: ClaimedDelivery,
): Promise<void> {
  const { ledger, clock } = options;
  const attemptedAt = clock.now();
  const result = await sendOnce(options, delivery, attemptedAt);
  if (!result) {
    await ledger.append(delivery.walletId, async (tx) => {
      if (!await completeDelivery(tx, delivery)) return [];
      return [abandoned(delivery, delivery.attempts, "webhook deleted")];
    });
    return;
  }

  const attempt = delivery.attempts + 1;
  const verdict = verdictAfter(delivery.kind, attempt, result, clock.now(), options.retryScale);
  await ledger.append(delivery.walletId, async (tx, wallet) => {
    // Only the holder of the claim moves the row; an attempt made after losing it is still a fact.
    const held = verdict.action === "retry"
      ? await rescheduleDelivery(tx, delivery, verdict.at)
      : await completeDelivery(tx, delivery);
    const events: NewEvent[] = [newEvent("DeliveryAttempted", {
      attemptId: randomId(20),
      deliveryId: delivery.id,
      webhookId: delivery.webhookId,
      kind: delivery.kind,
      messageId: delivery.messageId,
      attempt,
      ok: result.ok,
      ...(result.status !== undefined ? { status: result.status } : {}),
      ...(result.ok ? {} : { error: result.error }),
      latencyMs: result.latencyMs,
      cost: attempt === 1 ? delivery.cost : 0,
      balance: wallet?.balance ?? 0,
      ...(held && verdict.action === "retry" ? { nextAttemptAt: verdict.at.toISOString() } : {}),
    })];
    if (held && verdict.action === "abandon") events.push(abandoned(delivery, attempt, verdict.reason));
    return events;
  });
}

/**
 * One send of a delivery: a POST to its webhook (or to the wallet's low-balance webhook), or the
 * low-balance email. Undefined when the target no longer exists.
 */
async function sendOnce(
  options: DeliveryWorkerOptions,
  delivery: ClaimedDelivery,
  attemptedAt: Date,
): Promise<PostResult | undefined> {
  const { sql } = options;
  if (delivery.kind === "alert" && delivery.webhookId === ALERT_EMAIL_ID) {
    const to = await findAlertEmail(sql, delivery.walletId);
    const mailer = options.mailer ?? createAlertMailer(undefined, "");
    return to ? await mailer.send(to, delivery.payload as unknown as LowBalancePayload) : undefined;
  }
  const webhook = delivery.kind === "alert"
    ? await findAlertWebhook(sql, delivery.walletId)
    : await findWebhook(sql, delivery.walletId, delivery.webhookId);
  if (!webhook) return undefined;
  try {
    const body = await renderDeliveryBody(webhook, delivery, options.signing, attemptedAt);
    return await postToWebhook(webhook, body, {
      messageId: delivery.messageId,
      now: attemptedAt,
      allowPrivate: options.allowPrivate,
    });
  } catch (error) {
    // A payload the format cannot render will not render on a retry either.
    return {
      ok: false,
      latencyMs: 0,
      retryable: false,
      error: `cannot render payload: ${describeError(error)}`,
    };
  }
}

function abandoned(delivery: ClaimedDelivery, attempts: number, reason: string): NewEvent {
  return newEvent("DeliveryAbandoned", {
    deliveryId: delivery.id,
    webhookId: delivery.webhookId,
    kind: delivery.kind,
    attempts,
    reason,
  });
}
