// Billed routes: each names its entry of the billing table (calls/prices.ts: price, call-log
// endpoint, what it needs of a scoped key) with `billing(...)` in its middleware; `billed` runs a
// call from its feature's builder as a ledger command and answers with the billing headers, and a
// request the route's validator refuses is billed at the same price.
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import type { RouteBilling } from "../calls/prices.ts";
import type { Idempotency } from "../ledger/command.ts";
import type { ReadSet } from "../ledger/reads.ts";
import { errorResponse, renderBody } from "./errors.ts";
import { failure, type Reply, UNAUTHORIZED } from "../calls/reply.ts";
import { sha256Hex } from "../ids.ts";
import { MAX_REQUEST_BODY_BYTES, readBodyBytes } from "./body.ts";
import { isKeyRefusal, KEYS_NOT_ALLOWED } from "../calls/key_gate.ts";
import { type BilledCall, type Caller, runBilledCall } from "../calls/billed_call.ts";
import { quoteInput } from "../storable_text.ts";

/**
 * Declares the route's price; requireWallet comes before it. A scoped key on a route closed to
 * keys is answered 403 at once, before the route reads anything or acts: billed at the route's
 * price like other bad input after authentication, and counted against the key's spend cap.
 */
export function billing(route: RouteBilling): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("billing", route);
    if (c.get("key") && !route.keys) return await billedFailure(c, 403, KEYS_NOT_ALLOWED);
    await next();
  };
}
/** What REST adds to a billed call: how the request's Idempotency-Key keeps its answer. */
export interface ReplayOptions {
  /** False: the answer is not kept for the Idempotency-Key (a refusal that cost nothing). */
  replayable?: boolean;
  /** What the Idempotency-Key keeps of the answer, when not the answer itself (a secret shown once). */
  keptAs?: (reply: Reply) => Reply;
}

/** An Idempotency-Key: 1 to 64 printable ASCII characters (the document shows the same pattern). */
export const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,64}$/;
export const INVALID_IDEMPOTENCY_KEY = "Invalid Idempotency-Key: must be 1 to 64 printable characters";
/** The methods whose billed calls honour an Idempotency-Key. */
export const REPLAYABLE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The request path with its query string, as the call log shows it. */
export function loggedPath(c: Context<AppEnv>): string {
  // The URL as sent from its path on: the log shows what the client asked for.
  const url = c.req.url;
  return url.slice(url.indexOf("/", url.indexOf("//") + 2));
}

async function idempotencyOf(
  c: Context<AppEnv>,
  key: string,
  keptAs: (reply: Reply) => Reply = (reply) => reply,
): Promise<Idempotency<Reply>> {
  const method = c.req.method;
  const body = new TextDecoder().decode(await readBodyBytes(c, MAX_REQUEST_BODY_BYTES));
  // A scoped key's requests are its own: another key, or the token, never gets their answers.
  const keyId = c.get("key")?.keyId;
  const caller = keyId ? `\nkey ${keyId}` : "";
  return {
    key,
    fingerprint: await sha256Hex(`${method}\n${loggedPath(c)}\n${body}${caller}`),
    keep: keptAs,
    replay: (kept) => kept,
    mismatch: () =>
      failure(422, `Idempotency-Key ${quoteInput(key)} was already used for a different request`),
  };
}

/**
 * Runs the call at the route's price (or the call's own) and answers it with the billing headers.
 * A scoped key's access is read from the request by the route's rule (the billing table), as for
 * the request its validator refused: a path the router could not decode names no bucket.
 */
export async function billed<R extends ReadSet>(
  c: Context<AppEnv>,
  call: BilledCall<R>,
  options: ReplayOptions = {},
): Promise<Response> {
  const walletId = c.get("walletId");
  const route = c.get("billing");
  if (!walletId || !route) throw new Error("billed() needs requireWallet and billing() before it");
  let decide = call.decide;
  let idempotency: Idempotency<Reply> | undefined;
  const key = c.req.header("idempotency-key");
  if (key !== undefined && REPLAYABLE_METHODS.has(c.req.method) && options.replayable !== false) {
    if (IDEMPOTENCY_KEY.test(key)) idempotency = await idempotencyOf(c, key, options.keptAs);
    // The route's header schema refuses it first (openapi.ts); this is for a request no validator saw.
    else decide = () => failure(400, INVALID_IDEMPOTENCY_KEY);
  }
  const caller: Caller = { walletId, key: c.get("key") };
  const access = caller.key
    ? route.keys?.({ method: c.req.method, pathname: new URL(c.req.url).pathname })
    : undefined;
  const result = await runBilledCall(c.get("services").ledger, { ...call, access, decide }, {
    caller,
    at: {
      method: c.req.method,
      path: loggedPath(c),
      endpoint: route.endpoint,
      startedAt: c.get("startedAt"),
    },
    routePrice: route.price,
    idempotency,
  });
  if (result.kind === "unauthorized") return errorResponse(c, 401, UNAUTHORIZED);
  const reply = result.outcome;
  // A revoked or expired key learns nothing of the wallet: no billing headers.
  if (isKeyRefusal(reply)) return errorResponse(c, reply.status, reply.body);
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
