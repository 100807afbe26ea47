// A background job that runs soon after start and then at a fixed interval, never twice at once;
// stop() waits for a run in progress. A run failed by a database outage is tried again with a
// bounded exponential backoff (src/backoff.ts), so the job catches up soon after the database
// returns rather than an interval later; any other failure is logged and the next run comes as planned.
import { createBackoff } from "./backoff.ts";

export interface PeriodicJob {
  stop(): Promise<void>;
}

/** The first retry of a job failed by an outage; it doubles up to MAX_BACKOFF_MS. */
const OUTAGE_FIRST_RETRY_MS = 1_000;

export function startPeriodic(
  name: string,
  run: () => Promise<unknown>,
  options: { intervalMs: number; firstAfterMs: number },
): PeriodicJob {
  const backoff = createBackoff(name, { firstMs: OUTAGE_FIRST_RETRY_MS });
  let running: Promise<unknown> | undefined;
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = () => {
    running = run()
      .then(() => backoff.succeeded(), (error) => backoff.failed(error))
      .finally(() => {
        running = undefined;
        if (!stopping) {
          timer = setTimeout(tick, Math.min(options.intervalMs, backoff.delay(options.intervalMs)));
        }
      });
  };
  timer = setTimeout(tick, options.firstAfterMs);
  return {
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await running;
    },
  };
}
