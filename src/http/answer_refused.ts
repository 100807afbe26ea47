// The answer to input refused at the edge (input_refused.ts), the same on every route: billed
// after authentication like other bad input when it is charged, logged at cost 0 when it is not.
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { billed } from "./billing.ts";
import { CLOSE_CONNECTION, InputRefused } from "./input_refused.ts";
import { failure } from "../ledger/command.ts";
import type { LogEndpoint } from "../../projections/call_logs.ts";

/** The answer to a refusal; after authentication a billed call (X-Balance, X-Cost, call log). */
export async function answerRefused(
  c: Context<AppEnv>,
  refusal: InputRefused,
  billing: { endpoint: LogEndpoint; cost: number },
): Promise<Response> {
  const headers: Record<string, string> = refusal.status === 400 ? {} : CLOSE_CONNECTION;
  if (!c.get("walletId")) return errorResponse(c, refusal.status, refusal.message, headers);
  let response: Response;
  try {
    response = await billedRefusal(c, refusal, billing, refusal.charged);
  } catch (error) {
    // The Idempotency-Key fingerprint needs the body, and that body was refused too.
    if (!(error instanceof InputRefused)) throw error;
    response = await billedRefusal(c, error, billing, false);
    headers.connection = "close";
  }
  for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
  return response;
}

function billedRefusal(
  c: Context<AppEnv>,
  refusal: InputRefused,
  billing: { endpoint: LogEndpoint; cost: number },
  replayable: boolean,
): Promise<Response> {
  const decision = failure(refusal.status, refusal.message);
  return billed(c, {
    endpoint: billing.endpoint,
    cost: refusal.charged ? billing.cost : 0,
    decide: () => decision,
    // A refusal that cost nothing is not kept as the answer to its Idempotency-Key.
    replayable,
  });
}
