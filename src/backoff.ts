// Bounded exponential backoff for a background loop while the database cannot be reached: after
// each failed run the loop waits twice as long, up to a bound, and its normal pace returns with the
// first success. The outage is logged once when it starts and once when it ends, not at every
// failed run. Any other failure is likely a bug: it is logged each time and changes no pace.
import { isDatabaseUnavailable } from "./db/faults.ts";
import { describeError, log, logError } from "./log.ts";
import { recordDatabaseAnswered, recordDatabaseUnavailable } from "./metrics/database_metrics.ts";

/** The longest a loop waits between two tries during an outage: recovery is noticed within it. */
export const MAX_BACKOFF_MS = 4_000;
/** The normal pace of the polling loops (the scheduler, the delivery worker) when nothing wakes them. */
export const DEFAULT_POLL_MS = 500;

export interface Backoff {
  /** How long to wait before the next run: `normalMs`, unless the database is out. */
  delay(normalMs: number): number;
  /** Records a failed run. */
  failed(error: unknown): void;
  /** Records a successful run; ends an outage. */
  succeeded(): void;
}

export interface BackoffOptions {
  /** The first wait once the database is out (default: the loop's normal interval). */
  firstMs?: number;
  /** The bound of the wait (default MAX_BACKOFF_MS). */
  maxMs?: number;
}

/** `name` says which loop it is in the log ("delivery poll", "scheduler pass", "sweep"). */
export function createBackoff(name: string, options: BackoffOptions = {}): Backoff {
  const maxMs = options.maxMs ?? MAX_BACKOFF_MS;
  let failures = 0;
  let outageSince: number | undefined;
  return {
    delay(normalMs) {
      if (outageSince === undefined) return normalMs;
      const first = options.firstMs ?? normalMs;
      return Math.min(maxMs, first * 2 ** Math.min(failures - 1, 30));
    },
    failed(error) {
      failures++;
      if (!isDatabaseUnavailable(error)) return logError(`${name} failed`, error);
      recordDatabaseUnavailable();
      if (outageSince !== undefined) return;
      outageSince = performance.now();
      log("warn", `${name}: database unavailable, backing off`, { error: describeError(error) });
    },
    succeeded() {
      recordDatabaseAnswered();
      if (outageSince !== undefined) {
        const seconds = Math.round((performance.now() - outageSince) / 100) / 10;
        log("info", `${name}: database reachable again`, { failedRuns: failures, outageSeconds: seconds });
        outageSince = undefined;
      }
      failures = 0;
    },
  };
}
