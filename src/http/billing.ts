// Billed routes: each declares its price and call-log endpoint once, with `billing(...)` in its
// middleware; `billed` runs the route's decision as a ledger command and answers with the billing
// headers, and a request the route's validator refuses is billed at the same price.
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import type { BilledCommand, DecideState, Decision, Idempotency } from "../ledger/command.ts";
import { INSUFFICIENT_CREDITS } from "../ledger/command.ts";
import type { ReadSet } from "../ledger/reads.ts";
import type { LogEndpoint } from "../../projections/call_logs.ts";
import { errorResponse, renderBody, UNAUTHORIZED } from "./errors.ts";
import { failure, type Reply } from "./reply.ts";
import { sha256Hex } from "../ids.ts";
import { activeWallets } from "./wallet_cache.ts";
import { MAX_REQUEST_BODY_BYTES, readBodyBytes } from "./body.ts";

/** What a route costs and where its calls are logged. */
export interface RouteBilling {
  price: number;
  endpoint: LogEndpoint;
}

/** Declares the route's price; requireWallet comes before it. */
export function billing(route: RouteBilling): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("billing", route);
    await next();
  };
}

export interface BilledCall<R extends ReadSet> {
  reads?: R;
  decide(state: DecideState<R>): Decision<Reply>;
  /** Overrides the route's price: 0 for a refusal that costs nothing. */
  price?: number;
  /** False: the answer is not kept for the Idempotency-Key (a refusal that cost nothing). */
  replayable?: boolean;
}

const REPLAYABLE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,64}$/;
const refuseUnpaid = () => failure(402, INSUFFICIENT_CREDITS);

/** The request path with its query string, as the call log shows it. */
export function loggedPath(c: Context<AppEnv>): string {
  const url = new URL(c.req.url);
  return url.pathname + url.search;
}

async function idempotencyOf(c: Context<AppEnv>, key: string): Promise<Idempotency<Reply>> {
  const method = c.req.method;
  const body = new TextDecoder().decode(await readBodyBytes(c, MAX_REQUEST_BODY_BYTES));
  return {
    key,
    fingerprint: await sha256Hex(`${method}\n${loggedPath(c)}\n${body}`),
    keep: (reply) => reply,
    replay: (kept) => kept,
    mismatch: () => failure(422, `Idempotency-Key "${key}" was already used for a different request`),
  };
}

export async function billed<R extends ReadSet>(c: Context<AppEnv>, call: BilledCall<R>): Promise<Response> {
  const walletId = c.get("walletId");
  const route = c.get("billing");
  if (!walletId || !route) throw new Error("billed() needs requireWallet and billing() before it");
  let decide = call.decide;
  let idempotency: Idempotency<Reply> | undefined;
  const key = c.req.header("idempotency-key");
  if (key !== undefined && REPLAYABLE_METHODS.has(c.req.method) && call.replayable !== false) {
    if (IDEMPOTENCY_KEY.test(key)) idempotency = await idempotencyOf(c, key);
    else decide = () => failure(400, "Invalid Idempotency-Key: must be 1 to 64 printable characters");
  }
  const command: BilledCommand<Reply, R> = {
    walletId,
    price: call.price ?? route.price,
    call: {
      method: c.req.method,
      path: loggedPath(c),
      endpoint: route.endpoint,
      startedAt: c.get("startedAt"),
    },
    idempotency,
    reads: call.reads,
    decide,
    unpaid: refuseUnpaid,
  };
  const result = await c.get("services").ledger.runBilled(command);
  if (result.kind === "unauthorized") {
    activeWallets.evict(walletId);
    return errorResponse(c, 401, UNAUTHORIZED);
  }
  const reply = result.outcome;
  const rendered = renderBody(c, reply.status, reply.contentType, reply.body);
  const headers: Record<string, string> = {
    ...reply.headers,
    "content-type": rendered.contentType,
    "x-balance": String(result.balance),
    "x-cost": String(result.cost),
  };
  if (result.replayed) headers["idempotent-replayed"] = "true";
  return new Response(rendered.body, { status: reply.status, headers });
}

/** A billed call that only fails: bad input after authentication is charged like any call. */
export function billedFailure(c: Context<AppEnv>, status: number, phrase: string): Promise<Response> {
  const decision = failure(status, phrase);
  return billed(c, { decide: () => decision });
}
