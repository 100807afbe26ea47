// The answer to a request the database failed (src/db/faults.ts): 503 with Retry-After, and a phrase
// that says whether the call may have been applied. A call that never reached COMMIT changed
// nothing; one whose COMMIT went out unanswered may have committed, and a retry with the same
// Idempotency-Key gets its first answer if it did, or runs it once if it did not.
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { DatabaseUnavailableError, isDatabaseUnavailable } from "../db/faults.ts";
import { UNAVAILABLE_PHRASES } from "../calls/reply.ts";

/** What a client waits before trying again: the service notices a returning database within ~1 s. */
export const RETRY_AFTER_SECONDS = 2;

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The 503 for `error` if the database failed the request, else undefined. */
export function unavailableResponse(c: Context<AppEnv>, error: unknown): Response | undefined {
  if (!isDatabaseUnavailable(error)) return undefined;
  // A fault that reached here unclassified came from a plain read or write outside the ledger: only
  // a read is surely harmless.
  const outcome = error instanceof DatabaseUnavailableError
    ? error.outcome
    : SAFE_METHODS.has(c.req.method)
    ? "unchanged"
    : "unknown";
  return errorResponse(c, 503, UNAVAILABLE_PHRASES[outcome], { "retry-after": String(RETRY_AFTER_SECONDS) });
}
