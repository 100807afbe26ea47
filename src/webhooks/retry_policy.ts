// When a failed delivery is tried again (CONTRACT section 8). Pure: the caller passes the time.
import type { AttemptResult } from "./delivery_channel.ts";
import type { DeliveryKind } from "./outbox.ts";
import type { ABANDON_CAUSES } from "../../events/catalogue.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Waits after attempts 1, 2, ...: about 5 s, 5 min, 30 min, 2 h, 5 h and 10 h, then give up. */
export const RETRY_DELAYS_MS = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

export type Verdict =
  | { action: "delivered" }
  | { action: "retry"; at: Date }
  | { action: "abandon"; reason: string };

/**
 * What follows attempt number `attempt` (1-based) of a delivery of `kind`. Email and alert deliveries
 * retry network errors, timeouts, 408, 429 and 5xx (the result's `retryable`); any other answer is
 * final. A scheduled run is never retried: its next run comes instead. `scale` shortens the waits
 * (DELIVERY_RETRY_SCALE, for tests).
 */
export function verdictAfter(
  kind: DeliveryKind,
  { attempt, result, now, scale = 1 }: { attempt: number; result: AttemptResult; now: Date; scale?: number },
): Verdict {
  if (result.ok) return { action: "delivered" };
  if (kind === "scheduled") {
    return { action: "abandon", reason: `scheduled run not retried: ${result.error}` };
  }
  if (!result.retryable) return { action: "abandon", reason: `final failure: ${result.error}` };
  if (attempt >= MAX_ATTEMPTS) {
    return { action: "abandon", reason: `gave up after ${attempt} attempts: ${result.error}` };
  }
  const wait = Math.max(1, Math.round(RETRY_DELAYS_MS[attempt - 1] * scale));
  return { action: "retry", at: new Date(now.getTime() + wait) };
}

/** Why a delivery whose verdict is "abandon" was given up: the status it is shown with follows from it. */
export function abandonCause(
  kind: DeliveryKind,
  attempt: number,
  result: AttemptResult,
): typeof ABANDON_CAUSES[number] {
  if (kind === "scheduled") return "not retried";
  if (!result.ok && !result.retryable) return "final answer";
  return attempt >= MAX_ATTEMPTS ? "retries exhausted" : "final answer";
}
