// Bounds how long a caller waits for the database. A lost or refused connection fails at once, but
// a slow or silent one would hold a caller for as long as TCP lets it: past the deadline the caller
// gets a DatabaseUnavailableError and the work, if it had started, goes on without it.
import { DatabaseUnavailableError, type FaultOutcome } from "./faults.ts";
import { recordDatabaseTimeout } from "../metrics/database_metrics.ts";

/** `work`, or a DatabaseUnavailableError with `outcome` if it has not settled within `ms` (0: no bound). */
export function withDeadline<T>(work: Promise<T>, ms: number, outcome: FaultOutcome): Promise<T> {
  if (!ms) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut(ms, outcome)), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/** A queued request for the database that the deadline may settle first. */
export interface Settleable<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

/**
 * Settles `waiting` with a DatabaseUnavailableError after `ms` unless it settles first. `dequeue`
 * takes it out of its queue if it is still there: then it never runs and nothing changed; if it
 * had already started, its outcome is unknown.
 */
export function expireAfter<T>(waiting: Settleable<T>, ms: number, dequeue: () => boolean): void {
  if (!ms) return;
  const { resolve, reject } = waiting;
  const timer = setTimeout(() => reject(timedOut(ms, dequeue() ? "unchanged" : "unknown")), ms);
  waiting.resolve = (value) => {
    clearTimeout(timer);
    resolve(value);
  };
  waiting.reject = (error) => {
    clearTimeout(timer);
    reject(error);
  };
}

/** Takes `item` out of `queue`; false when it was no longer there. */
export function removeFrom<T>(queue: T[], item: T): boolean {
  const index = queue.indexOf(item);
  if (index >= 0) queue.splice(index, 1);
  return index >= 0;
}

function timedOut(ms: number, outcome: FaultOutcome): DatabaseUnavailableError {
  recordDatabaseTimeout();
  return new DatabaseUnavailableError(outcome, `no answer within ${ms} ms`);
}
