// What a billed call answers, whatever brought it: a status, a content type and a body, built by the
// call's pure decision; REST renders it with the billing headers (http/billing.ts), MCP as a tool
// result (mcp/tool_result.ts).
import type { CallDecision, Effect } from "../ledger/command.ts";
import type { NewEvent } from "../../events/catalogue.ts";
import type { FaultOutcome } from "../db/faults.ts";

export interface Reply {
  status: number;
  contentType: string;
  body: string;
  /** Headers of the answer beyond the content type and the billing ones (an ETag, Retry-After); a replay drops them. */
  headers?: Record<string, string>;
}

export function textReply(status: number, body: string): Reply {
  return { status, contentType: "text/plain; charset=utf-8", body };
}

/** The phrase of a call whose token or key does not authenticate (REST's 401, MCP's tool error). */
export const UNAUTHORIZED = "Unauthorized";

/** What a call the database failed says: whether it may have been applied (src/db/faults.ts). */
export const UNAVAILABLE_PHRASES: Record<FaultOutcome, string> = {
  unchanged: "Database unavailable, nothing was changed: retry shortly",
  unknown: "Database unavailable, outcome unknown: retry with the same Idempotency-Key",
};

/** The phrase of every 429: a rate limit, or a wallet past its allowance of free calls. */
export const TOO_MANY_REQUESTS = "Too Many Requests";

export function jsonReply(status: number, value: unknown): Reply {
  return { status, contentType: "application/json", body: JSON.stringify(value) };
}

export interface Consequences {
  events?: NewEvent[];
  effects?: Effect[];
  /** Credits charged when they differ from the route's price. */
  charge?: number;
  /** The call log's error when the call failed though it answers 200 (a failed test delivery). */
  error?: string;
}

/** A served call: the reply, and the call log shows its status. */
export function answer(reply: Reply, consequences: Consequences = {}): CallDecision<Reply> {
  const { error, ...rest } = consequences;
  return { outcome: reply, log: { status: reply.status, ...(error ? { error } : {}) }, ...rest };
}

/** A failed call: the phrase is the reply and the call log's error. */
export function failure(status: number, phrase: string): CallDecision<Reply> {
  return { outcome: textReply(status, phrase), log: { status, error: phrase } };
}
