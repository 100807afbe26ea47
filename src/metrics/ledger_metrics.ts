// Ledger and credit families: queue depth and transactions in flight (read at scrape time), batch
// sizes, batch time split into waiting (in the queue) and working (the transaction), commits, the
// split retries of a failed batch, LedgerBusy refusals, and the credits charged and credited.
import { Counter, Gauge, Histogram } from "prom-client";
import { metricsOn, PREFIX, registry, Sources } from "./registry.ts";

/** What a ledger reports at scrape time. */
export interface LedgerState {
  queued: number;
  inFlight: number;
  /** The queue's bound (LedgerBusy past it). */
  capacity: number;
}

/** The timing of a committed batch, as the ledger measures it (ledger/batch_stats.ts BatchTiming). */
export interface CommittedBatch {
  size: number;
  waitMs: number;
  workMs: number;
}

/** The events of the endpoint types a label may carry; anything else is "other". */
const ENDPOINTS = new Set(["kv", "token", "webhook", "webhook-delivery", "email", "payment"]);

const ledgers = new Sources<LedgerState>();
const sum = (pick: (state: LedgerState) => number) => ledgers.read().reduce((total, s) => total + pick(s), 0);

new Gauge({
  name: `${PREFIX}ledger_queue_depth`,
  help: "Billed calls waiting in the ledger queue for a transaction",
  registers: [registry],
  collect() {
    this.set(sum((s) => s.queued));
  },
});
new Gauge({
  name: `${PREFIX}ledger_queue_capacity`,
  help: "The ledger queue's bound: past it calls are refused with 503 (LedgerBusy)",
  registers: [registry],
  collect() {
    this.set(sum((s) => s.capacity));
  },
});
new Gauge({
  name: `${PREFIX}ledger_transactions_in_flight`,
  help: "Ledger batch transactions running now",
  registers: [registry],
  collect() {
    this.set(sum((s) => s.inFlight));
  },
});
const batchSize = new Histogram({
  name: `${PREFIX}ledger_batch_size`,
  help: "Billed calls per committed ledger transaction",
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
  registers: [registry],
});
const batchSeconds = new Histogram({
  name: `${PREFIX}ledger_batch_seconds`,
  help: "A committed batch's time: waiting (oldest call in the queue) and working (its transaction)",
  labelNames: ["phase"],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});
const waiting = batchSeconds.labels("waiting");
const working = batchSeconds.labels("working");
const commits = new Counter({
  name: `${PREFIX}ledger_commits_total`,
  help: "Ledger transactions committed (billed batches)",
  registers: [registry],
});
const retries = new Counter({
  name: `${PREFIX}ledger_batch_retries_total`,
  help: "Failed batches split in two and tried again (down to one call each)",
  registers: [registry],
});
const busy = new Counter({
  name: `${PREFIX}ledger_busy_total`,
  help: "Calls refused because the ledger queue was full (LedgerBusy, 503)",
  registers: [registry],
});
const charged = new Counter({
  name: `${PREFIX}credits_charged_total`,
  help: "Credits debited by committed calls (CallBilled), by endpoint type",
  labelNames: ["endpoint"],
  registers: [registry],
});
const billedCalls = new Counter({
  name: `${PREFIX}billed_calls_total`,
  help: "Committed billed calls (CallBilled events, free ones included), by endpoint type",
  labelNames: ["endpoint"],
  registers: [registry],
});
const credited = new Counter({
  name: `${PREFIX}credits_credited_total`,
  help: "Credits added to wallets, by how (granted, purchased)",
  labelNames: ["source"],
  registers: [registry],
});

// Every series of a bounded label exists from the start at 0, so rate() and increase() see the first event.
for (const endpoint of ENDPOINTS) {
  billedCalls.labels(endpoint).inc(0);
  charged.labels(endpoint).inc(0);
}
for (const source of ["granted", "purchased"]) credited.labels(source).inc(0);

/** A ledger's queue, read at scrape time; returns how to stop reading it. */
export function watchLedger(read: () => LedgerState): () => void {
  return ledgers.add(read);
}

export function recordBatch(batch: CommittedBatch): void {
  if (!metricsOn()) return;
  commits.inc();
  batchSize.observe(batch.size);
  waiting.observe(batch.waitMs / 1000);
  working.observe(batch.workMs / 1000);
}

export function recordBatchRetry(): void {
  if (metricsOn()) retries.inc();
}

export function recordLedgerBusy(): void {
  if (metricsOn()) busy.inc();
}

interface MovingEvent {
  type: string;
  data: unknown;
}

/** Committed events: the credits their CallBilled, CreditsGranted and CreditsPurchased moved. */
export function recordCreditMovements(events: readonly MovingEvent[]): void {
  if (!metricsOn()) return;
  for (const event of events) {
    if (event.type === "CallBilled") {
      const data = event.data as { endpoint: string; cost: number };
      const endpoint = ENDPOINTS.has(data.endpoint) ? data.endpoint : "other";
      billedCalls.labels(endpoint).inc();
      if (data.cost > 0) charged.labels(endpoint).inc(data.cost);
    } else if (event.type === "CreditsGranted" || event.type === "CreditsPurchased") {
      const amount = (event.data as { amount: number }).amount;
      credited.labels(event.type === "CreditsGranted" ? "granted" : "purchased").inc(amount);
    }
  }
}
