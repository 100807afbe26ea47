// Delivery families: attempts by outcome, the claim rounds that walked past a wallet or endpoint at
// its share of the slots (the per-wallet fairness of issue 21), and the outbox read at scrape time:
// rows by state, the age of the oldest due row and of the oldest pending one, paused webhooks. The
// outbox reading is one bounded query (webhooks/outbox_gauges.ts), cached (registry.ts CachedReading).
import { Counter, Gauge } from "prom-client";
import { CachedReading, metricsOn, PREFIX, registry } from "./registry.ts";

/** The outbox at a moment; counts stop at the reading's cap. */
export interface OutboxState {
  /** Rows by state: due (waiting for a slot), in_flight (claimed), scheduled (a later retry), held. */
  rows: Record<OutboxRowState, number>;
  /** Seconds since the oldest due row became due (0: none due). */
  oldestDueSeconds: number;
  /** Seconds since the oldest row still to be delivered was queued (0: none). */
  oldestPendingSeconds: number;
  pausedWebhooks: number;
}

export const OUTBOX_ROW_STATES = ["due", "in_flight", "scheduled", "held"] as const;
export type OutboxRowState = typeof OUTBOX_ROW_STATES[number];

const attempts = new Counter({
  name: `${PREFIX}delivery_attempts_total`,
  help: "Delivery attempts made, by outcome (delivered, failed)",
  labelNames: ["outcome"],
  registers: [registry],
});
const throttled = new Counter({
  name: `${PREFIX}delivery_fairness_throttled_total`,
  help: "Claim rounds that passed over a wallet or an endpoint at its share of the delivery slots",
  labelNames: ["share"],
  registers: [registry],
});

for (const outcome of ["delivered", "failed"]) attempts.labels(outcome).inc(0);
for (const share of ["wallet", "endpoint"]) throttled.labels(share).inc(0);

const outbox = new CachedReading<OutboxState>();

/** The outbox reading of this process, read at most every READING_TTL_MS by scrapes. */
export function watchOutbox(read: () => Promise<OutboxState>): void {
  outbox.source(read);
}

const outboxState = () => outbox.get();

new Gauge({
  name: `${PREFIX}outbox_rows`,
  help: "Outbox rows by state (due, in_flight, scheduled, held); each count stops at 10000",
  labelNames: ["state"],
  registers: [registry],
  async collect() {
    const state = await outboxState();
    if (!state) return;
    for (const name of OUTBOX_ROW_STATES) this.labels(name).set(state.rows[name]);
  },
});
new Gauge({
  name: `${PREFIX}outbox_oldest_due_seconds`,
  help: "Seconds since the oldest due delivery became due (0: none due)",
  registers: [registry],
  async collect() {
    const state = await outboxState();
    if (state) this.set(state.oldestDueSeconds);
  },
});
new Gauge({
  name: `${PREFIX}outbox_oldest_pending_seconds`,
  help: "Seconds since the oldest delivery not yet delivered or abandoned was queued (0: none)",
  registers: [registry],
  async collect() {
    const state = await outboxState();
    if (state) this.set(state.oldestPendingSeconds);
  },
});
new Gauge({
  name: `${PREFIX}webhooks_paused`,
  help: "Webhooks paused by their failures (stops at 10000)",
  registers: [registry],
  async collect() {
    const state = await outboxState();
    if (state) this.set(state.pausedWebhooks);
  },
});

export function recordDeliveryAttempt(delivered: boolean): void {
  if (metricsOn()) attempts.labels(delivered ? "delivered" : "failed").inc();
}

/** A claim round walked past `wallets` wallets and `endpoints` endpoints at their share. */
export function recordFairnessThrottle(passed: { wallets: number; endpoints: number }): void {
  if (!metricsOn()) return;
  if (passed.wallets > 0) throttled.labels("wallet").inc(passed.wallets);
  if (passed.endpoints > 0) throttled.labels("endpoint").inc(passed.endpoints);
}
