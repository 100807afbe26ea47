// The delivery worker, one per instance: claims due outbox rows, POSTs each once, and records the
// attempt (DeliveryAttempted, DeliveryAbandoned when it gives up, and what the endpoint's health
// adds) in the same transaction that reschedules, holds or finishes the row. Delivery is at least once: a crash between the POST and that
// commit repeats the POST after the lease, with the same `webhook-id` so receivers can deduplicate.
import type { Sql } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Clock } from "../clock.ts";
import { randomId } from "../ids.ts";
import { claimDueDeliveries, type ClaimedDelivery, newDeliveryId, newMessageId } from "./outbox.ts";
import type { DeliveryChannels } from "./delivery_channel.ts";
import { recordAttempt } from "./attempt_record.ts";
import type { HealthRules } from "./endpoint_health.ts";
import { logError } from "../log.ts";
import { createBackoff } from "../backoff.ts";

export interface DeliveryWorkerOptions {
  sql: Sql;
  ledger: Ledger;
  clock: Clock;
  /** How each kind of delivery is sent. */
  channels: DeliveryChannels;
  /** DELIVERY_RETRY_SCALE: multiplies the retry waits. */
  retryScale: number;
  /** WEBHOOK_PAUSE_AFTER_FAILURES and WEBHOOK_PAUSE_AFTER_HOURS; default 20 failures over 24 hours. */
  health?: HealthRules;
  /** How often the outbox is polled for due rows; deliveries queued in this process also wake it. */
  pollMs?: number;
  /** Most attempts in flight at once in this instance; a slow receiver holds only its own slot. */
  maxInFlight?: number;
  /** How long a claim keeps other instances away: well past the 10 s timeout plus the recording. */
  leaseMs?: number;
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

export function startDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
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

  timer = setTimeout(tick, 0);
  return {
    // Called after the commit that queued a delivery, so the row is there to claim.
    wake: tick,
    async stop() {
      stopping = true;
      clearTimeout(timer);
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
  const channel = options.channels[delivery.kind];
  const at = options.clock.now();
  const result = await channel.send(delivery, at);
  await options.ledger.appendUnbilled(recordAttempt({
    delivery,
    result,
    logPath: channel.logPath(delivery),
    attemptId: randomId(20),
    at,
    retryScale: options.retryScale,
    rules: options.health,
    alertIds: {
      deliveryIds: [newDeliveryId(), newDeliveryId()],
      messageIds: [newMessageId(), newMessageId()],
    },
  }));
}
