// The rate limit of the free views (GET /token/ledger and /token/usage), pure: at most
// VIEW_CALLS_PER_MINUTE calls in any minute per wallet, decided from the times of its latest calls
// as the wallet's lock holds them, so it holds across instances.
import type { CallDecision } from "../ledger/command.ts";
import { VIEW_CALLS_PER_MINUTE, type ViewCallsRow } from "../../projections/view_calls.ts";
import { type Reply, textReply, TOO_MANY_REQUESTS } from "../calls/reply.ts";

export { VIEW_CALLS_PER_MINUTE };
export const VIEW_WINDOW_MS = 60_000;

/** Whole seconds until one more call fits in the window; 0 when it fits now. */
export function viewWaitSeconds(calls: ViewCallsRow | undefined, now: Date): number {
  const recent = calls?.recent ?? [];
  if (recent.length < VIEW_CALLS_PER_MINUTE) return 0;
  // The oldest of the last VIEW_CALLS_PER_MINUTE calls leaves the window first.
  const oldest = Date.parse(recent[recent.length - VIEW_CALLS_PER_MINUTE]);
  const waitMs = oldest + VIEW_WINDOW_MS - now.getTime();
  return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0;
}

/** `decide` when the call fits the limit, else 429 with Retry-After (free, logged like any call). */
export function withinViewLimit(
  calls: ViewCallsRow | undefined,
  now: Date,
  decide: () => CallDecision<Reply>,
): CallDecision<Reply> {
  const wait = viewWaitSeconds(calls, now);
  if (wait === 0) return decide();
  const reply = { ...textReply(429, TOO_MANY_REQUESTS), headers: { "retry-after": String(wait) } };
  return { outcome: reply, log: { status: 429, error: TOO_MANY_REQUESTS } };
}
