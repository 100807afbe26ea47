// The service's one Prometheus registry (prom-client) and whether metrics are on. Metrics are off
// unless METRICS_PORT is set: every record function of the families returns at once then, so an
// instance without a scrape pays one boolean test per event. Gauges that read a state (queue
// depth, pool, outbox) are computed in collect() at scrape time from sources the owners register.
import { collectDefaultMetrics, Registry } from "prom-client";

export const registry = new Registry();

/** The prefix of every family of this service (process and runtime metrics keep prom-client's names). */
export const PREFIX = "credit_api_";

let on = false;

/** Turns the recording on (once, at start-up, when METRICS_PORT is set); adds the process metrics. */
export function enableMetrics(): void {
  if (on) return;
  on = true;
  // RSS, heap, event-loop lag, GC and open handles, under prom-client's standard names.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
}

/** Whether events are recorded; the families test it before any work. */
export function metricsOn(): boolean {
  return on;
}

/** Bounds a status code to its class label ("2xx" ... "5xx"). */
export function statusClass(status: number): string {
  if (status >= 500) return "5xx";
  if (status >= 400) return "4xx";
  if (status >= 300) return "3xx";
  if (status >= 200) return "2xx";
  return "1xx";
}

/** Registers a source of a scrape-time reading; several of one kind in a process add up (tests). */
export class Sources<T> {
  #sources = new Set<() => T>();

  add(source: () => T): () => void {
    this.#sources.add(source);
    return () => this.#sources.delete(source);
  }

  read(): T[] {
    return [...this.#sources].map((source) => source());
  }
}

/** How long one database reading serves scrapes. */
export const READING_TTL_MS = 5_000;
/** A reading not answered within this is left to finish on its own; the scrape uses the last one. */
const READING_WAIT_MS = 1_000;

/**
 * A reading of the database for scrape-time gauges: taken at most every READING_TTL_MS, and a
 * failed or slow one leaves the last values, so /metrics answers while the database is out.
 */
export class CachedReading<T> {
  #read: (() => Promise<T>) | undefined;
  #last: T | undefined;
  #lastAt = -Infinity;
  #reading: Promise<void> | undefined;

  /** Where the readings come from (the service plugs its database in at start-up). */
  source(read: () => Promise<T>): void {
    this.#read = read;
  }

  /** The latest reading: a fresh one if the last is old and it comes in time; undefined before any. */
  async get(): Promise<T | undefined> {
    if (!this.#read) return undefined;
    if (performance.now() - this.#lastAt >= READING_TTL_MS && !this.#reading) {
      this.#reading = this.#read().then((value) => {
        this.#last = value;
        this.#lastAt = performance.now();
      }, () => {/* the database is out: the last values stand */}).finally(() => this.#reading = undefined);
    }
    if (this.#reading) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.#reading, new Promise((r) => timer = setTimeout(r, READING_WAIT_MS))]);
      clearTimeout(timer);
    }
    return this.#last;
  }
}
