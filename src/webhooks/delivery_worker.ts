// The delivery worker, one per instance: claims due outbox rows, POSTs each once, and records the
// attempt (DeliveryAttempted, DeliveryAbandoned when it gives up, and what the endpoint's health
// adds) in the same transaction that reschedules, holds or finishes the row. Delivery is at least once: a crash between the POST and that
// commit repeats the POST after the lease, with the same `webhook-id` so receivers can deduplicate.
// The instance's slots are shared out (delivery_slots.ts): a wallet holds at most its share, one
// endpoint of it less, and the wallets with due rows take turns, so a slow or silent endpoint
// delays only its own wallet.
import type { Sql } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Clock } from "../clock.ts";
import { randomId } from "../ids.ts";
import { type ClaimedDelivery, newDeliveryId, newMessageId } from "./outbox.ts";
import {
  claimDueDeliveries,
  type DueEndpoint,
  endpointKey,
  endpointOf,
  endpointsWithDueDeliveries,
  WALK_FROM_START,
  type WalkStart,
} from "./delivery_claims.ts";
import type { DeliveryChannels } from "./delivery_channel.ts";
import { recordAttempt } from "./attempt_record.ts";
import type { HealthRules } from "./endpoint_health.ts";
import { DEFAULT_SLOTS, type DeliverySlots, slotsInUse } from "./delivery_slots.ts";
import { logError } from "../log.ts";
import { createBackoff, DEFAULT_POLL_MS } from "../backoff.ts";
import { recordDeliveryAttempt, recordFairnessThrottle } from "../metrics/delivery_metrics.ts";

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
  /**
   * Attempts in flight at once in this instance (DELIVERY_SLOTS), and the most one wallet and one
   * endpoint of a wallet may hold (DELIVERY_SLOTS_PER_WALLET, DELIVERY_SLOTS_PER_ENDPOINT).
   */
  slots?: DeliverySlots;
  /** How long a claim keeps other instances away: well past the 10 s timeout plus the recording. */
  leaseMs?: number;
}

export interface DeliveryWorker {
  /** Look for due rows now. */
  wake(): void;
  /** Stops claiming and waits for the attempts in flight to be recorded. */
  stop(): Promise<void>;
}

const DEFAULT_LEASE_MS = 60_000;
/** Endpoints one claim looks at beyond the free slots and the endpoints at their share. */
const WALK_SLACK = 4;

export function startDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const slots = options.slots ?? DEFAULT_SLOTS;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const inFlight = new Map<Promise<void>, ClaimedDelivery>();
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let claiming: Promise<void> | undefined;
  let again = false;
  // The turn goes round the wallets with due rows in wallet id order: each claim starts after the
  // last wallet the one before served, so none waits for more than one round.
  let after: WalkStart = WALK_FROM_START;
  // While the database is out, polls come less often and the outage is logged once.
  const backoff = createBackoff("delivery poll");

  function start(delivery: ClaimedDelivery) {
    const attempt: Promise<void> = attemptDelivery(options, delivery)
      .catch((error) =>
        // The lease runs out and another claim retries it; nothing is lost.
        logError("delivery attempt not recorded", error, { deliveryId: delivery.id })
      )
      .finally(() => {
        inFlight.delete(attempt);
        tick();
      });
    inFlight.set(attempt, delivery);
  }

  // Claims due rows for the free slots, wallets in turn, and starts their attempts without waiting
  // for them; each finished attempt frees a slot and looks again. One call walks the endpoints with
  // due rows at most once round.
  async function claim() {
    let wrapped = after.walletId === "";
    while (!stopping && inFlight.size < slots.total) {
      const free = slots.total - inFlight.size;
      const inUse = slotsInUse(inFlight.values());
      const now = options.clock.now();
      // Endpoints at their share are walked past; the others are each worth a slot, at least.
      const full = [...inUse.endpoints.values()].filter((n) => n >= slots.perEndpoint).length;
      const fullWallets = [...inUse.wallets.values()].filter((n) => n >= slots.perWallet).length;
      recordFairnessThrottle({ wallets: fullWallets, endpoints: full });
      const limit = free + full + WALK_SLACK;
      const endpoints = await endpointsWithDueDeliveries(options.sql, {
        now,
        after,
        limit,
        shares: slots,
        inUse,
      });
      const claimed = endpoints.length === 0 ? [] : await claimDueDeliveries(options.sql, {
        now,
        limit: free,
        leaseMs,
        endpoints,
        shares: slots,
        inUse,
      });
      for (const delivery of claimed) start(delivery);
      if (claimed.length === free) {
        // The slots ran out in this round: the next claim starts with the wallet after the last one served.
        after = { ...lastServed(endpoints, claimed), nextWallet: true };
        continue;
      }
      // Every endpoint walked got what its shares allow: walk on, or round to the start once.
      if (endpoints.length === limit) {
        after = endpoints[endpoints.length - 1];
        continue;
      }
      after = WALK_FROM_START;
      if (wrapped) return;
      wrapped = true;
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
      await Promise.all(inFlight.keys());
    },
  };
}

/** The endpoint of `claimed` that comes last in the walk's order. */
function lastServed(endpoints: DueEndpoint[], claimed: ClaimedDelivery[]): DueEndpoint {
  const served = new Set(claimed.map((d) => endpointKey(d.walletId, endpointOf(d))));
  return endpoints.findLast((e) => served.has(endpointKey(e.walletId, e.endpoint))) ??
    endpoints[endpoints.length - 1];
}

/** One attempt of one claimed delivery, recorded through the ledger. */
export async function attemptDelivery(
  options: DeliveryWorkerOptions,
  delivery: ClaimedDelivery,
): Promise<void> {
  const channel = options.channels[delivery.kind];
  const at = options.clock.now();
  const result = await channel.send(delivery, at);
  if (result) recordDeliveryAttempt(result.ok);
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
