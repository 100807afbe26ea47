// Runs a route's work as a billed call through the ledger and answers with the billing headers.
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import type { BilledCommand, Decision } from "../ledger/command.ts";
import { failure } from "../ledger/command.ts";
import type { LogEndpoint } from "../../projections/call_logs.ts";
import { errorResponse, renderBody, UNAUTHORIZED } from "./errors.ts";
import { sha256Hex } from "../ids.ts";
import { activeWallets } from "./wallet_cache.ts";
import { MAX_REQUEST_BODY_BYTES, readBodyBytes } from "./body.ts";

export interface BilledCall {
  cost: number;
  endpoint: LogEndpoint;
  prefetch?: BilledCommand["prefetch"];
  decide: BilledCommand["decide"];
  /** False: the answer is not kept for the Idempotency-Key (a refusal that cost nothing). */
  replayable?: boolean;
}

const REPLAYABLE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,64}$/;

/** The request path with its query string, as the call log shows it. */
export function loggedPath(c: Context<AppEnv>): string {
  const url = new URL(c.req.url);
  return url.pathname + url.search;
}

export async function billed(c: Context<AppEnv>, call: BilledCall): Promise<Response> {
  const walletId = c.get("walletId");
  if (!walletId) throw new Error("billed() needs requireWallet before it");
  const method = c.req.method;
  let decide = call.decide;
  let idempotency: BilledCommand["idempotency"];
  const key = c.req.header("idempotency-key");
  if (key !== undefined && REPLAYABLE_METHODS.has(method) && call.replayable !== false) {
    if (IDEMPOTENCY_KEY.test(key)) {
      const body = new TextDecoder().decode(await readBodyBytes(c, MAX_REQUEST_BODY_BYTES));
      idempotency = { key, fingerprint: await sha256Hex(`${method}\n${loggedPath(c)}\n${body}`) };
    } else {
      decide = () => failure(400, "Invalid Idempotency-Key: must be 1 to 64 printable characters");
    }
  }
  const result = await c.get("services").ledger.run({
    walletId,
    cost: call.cost,
    call: { method, path: loggedPath(c), endpoint: call.endpoint, startedAt: c.get("startedAt") },
    idempotency,
    prefetch: call.prefetch,
    decide,
  });
  if (result.kind === "unauthorized") {
    activeWallets.evict(walletId);
    return errorResponse(c, 401, UNAUTHORIZED);
  }
  const { reply } = result;
  const rendered = renderBody(c, reply.status, reply.contentType, reply.body);
  const headers: Record<string, string> = {
    "content-type": rendered.contentType,
    "x-balance": String(result.balance),
    "x-cost": String(result.cost),
  };
  if (result.replayed) headers["idempotent-replayed"] = "true";
  return new Response(rendered.body, { status: reply.status, headers });
}

/** A billed call that only fails: bad input after authentication is charged like any call. */
export function billedFailure(
  c: Context<AppEnv>,
  endpoint: LogEndpoint,
  status: number,
  phrase: string,
  cost = 1,
): Promise<Response> {
  const decision: Decision = failure(status, phrase);
  return billed(c, { cost, endpoint, decide: () => decision });
}
