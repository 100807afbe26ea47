// What the ledger's batches were like over a window: how many calls shared a transaction, how long
// calls waited in the queue for one, and how a batch's working time split between waiting for
// Postgres and running JavaScript. The service logs it every STATS_INTERVAL_MS while batches run
// (one "ledger" line), so an operator and the bench see the pipeline, not only its throughput.

/** One committed batch, as the ledger times it. */
export interface BatchTiming {
  size: number;
  /** From the oldest call's arrival in the queue to the batch's start. */
  waitMs: number;
  /** From the batch's start to its commit. */
  workMs: number;
  /** Of workMs, the time spent waiting for Postgres (BEGIN, the lock and read round trip, the writes, COMMIT). */
  dbMs: number;
}

export const STATS_INTERVAL_MS = 10_000;
/** Batches a window keeps for its percentiles; past it the window still counts them. */
const KEPT = 8_192;

export interface BatchSummary {
  batches: number;
  calls: number;
  sizeP50: number;
  sizeP99: number;
  waitMsP50: number;
  waitMsP99: number;
  workMsP50: number;
  workMsP99: number;
  dbMsP50: number;
  dbMsP99: number;
  jsMsP50: number;
  jsMsP99: number;
}

export class BatchStats {
  #batches = 0;
  #calls = 0;
  #kept: BatchTiming[] = [];

  record(timing: BatchTiming): void {
    this.#batches++;
    this.#calls += timing.size;
    if (this.#kept.length < KEPT) this.#kept.push(timing);
  }

  /** The window's summary, and a fresh window; undefined when no batch ran. */
  take(): BatchSummary | undefined {
    if (this.#batches === 0) return undefined;
    const kept = this.#kept;
    const summary: BatchSummary = {
      batches: this.#batches,
      calls: this.#calls,
      ...percentiles("size", kept.map((b) => b.size)),
      ...percentiles("waitMs", kept.map((b) => b.waitMs)),
      ...percentiles("workMs", kept.map((b) => b.workMs)),
      ...percentiles("dbMs", kept.map((b) => b.dbMs)),
      ...percentiles("jsMs", kept.map((b) => b.workMs - b.dbMs)),
    } as BatchSummary;
    this.#batches = 0;
    this.#calls = 0;
    this.#kept = [];
    return summary;
  }
}

function percentiles(name: string, values: number[]): Record<string, number> {
  const sorted = values.sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  const round = (n: number) => Math.round(n * 100) / 100;
  return { [`${name}P50`]: round(at(0.5)), [`${name}P99`]: round(at(0.99)) };
}
