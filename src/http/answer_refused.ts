// The answer to input refused at the edge (input_refused.ts), the same on every route: billed
// after authentication like other bad input when it is charged, logged at cost 0 when it is not.
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { billed } from "./billing.ts";
import { CLOSE_CONNECTION, InputRefused } from "./input_refused.ts";
import { failure } from "../calls/reply.ts";

/** The answer to a refusal; after authentication a billed call (X-Balance, X-Cost, call log). */
export async function answerRefused(c: Context<AppEnv>, refusal: InputRefused): Promise<Response> {
  const headers: Record<string, string> = refusal.status === 400 ? {} : CLOSE_CONNECTION;
  // Before authentication, or before the route declared its price: a plain answer.
  if (!c.get("walletId") || !c.get("billing")) {
    return errorResponse(c, refusal.status, refusal.message, headers);
  }
  let response: Response;
  try {
    response = await billedRefusal(c, refusal, refusal.charged);
  } catch (error) {
    // The Idempotency-Key fingerprint needs the body, and that body was refused too.
    if (!(error instanceof InputRefused)) throw error;
    response = await billedRefusal(c, error, false);
    headers.connection = "close";
  }
  for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
  return response;
}

function billedRefusal(c: Context<AppEnv>, refusal: InputRefused, replayable: boolean): Promise<Response> {
  const decision = failure(refusal.status, refusal.message);
  // A refusal that cost nothing is not kept as the answer to its Idempotency-Key.
  return billed(c, { ...(refusal.charged ? {} : { price: 0 }), decide: () => decision }, { replayable });
}
