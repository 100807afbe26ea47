// A background job that runs soon after start and then at a fixed interval, never twice at once;
// stop() waits for a run in progress. A failed run is logged and the next one comes as planned.
import { logError } from "./log.ts";

export interface PeriodicJob {
  stop(): Promise<void>;
}

export function startPeriodic(
  name: string,
  run: () => Promise<unknown>,
  options: { intervalMs: number; firstAfterMs: number },
): PeriodicJob {
  let running: Promise<unknown> | undefined;
  const tick = () => {
    if (running) return;
    running = run().catch((error) => logError(`${name} failed`, error)).finally(() => running = undefined);
  };
  const timer = setInterval(tick, options.intervalMs);
  const first = setTimeout(tick, options.firstAfterMs);
  return {
    async stop() {
      clearInterval(timer);
      clearTimeout(first);
      await running;
    },
  };
}
