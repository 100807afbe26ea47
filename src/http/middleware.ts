// Cross-cutting concerns: request ids, one JSON log line per request, and authentication.
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import type { Services } from "../calls/services.ts";
import { HttpError } from "./errors.ts";
import { UNAUTHORIZED } from "../calls/reply.ts";
import { sha256Hex } from "../ids.ts";
import { findActiveWallet } from "../../projections/wallets.ts";
import { activeWallets, knownKeys } from "../calls/wallet_cache.ts";
import { findKeyByHash } from "../../projections/scoped_keys.ts";
import { isScopedKey } from "../keys/commands.ts";
import { KEY_EXPIRED, KEY_REVOKED } from "../calls/key_gate.ts";
import { logRequest } from "../log.ts";
import { withDeadline } from "../db/deadline.ts";
import { clientNetwork } from "./client_network.ts";
import { lookUpPresented } from "./unknown_tokens.ts";
import { requestIdHeaders, requestIdsOf } from "./request_id.ts";
import { countAnswer } from "./request_metrics.ts";

/**
 * What every request passes through first and last, in one middleware (each layer costs every call):
 * the services, the request ids (request_id.ts), then, once answered, the pacing of a client's
 * refusals (refusal_pacing.ts), the access log line and the request id headers.
 */
export function requestEnvelope(
  services: Services,
  options: { logRequests: boolean; paceRefusal: (c: Context<AppEnv>) => Promise<void> | undefined },
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("services", services);
    c.set("startedAt", performance.now());
    const ids = requestIdsOf(c.req.header("x-request-id"));
    c.set("requestId", ids.requestId);
    if (ids.clientRequestId !== undefined) c.set("clientRequestId", ids.clientRequestId);
    await next();
    const held = options.paceRefusal(c);
    if (held) await held;
    if (options.logRequests) logRequestOf(c);
    countAnswer(c);
    for (const [name, value] of Object.entries(requestIdHeaders(ids))) c.res.headers.set(name, value);
    if (c.res.status === 401) c.res.headers.set("www-authenticate", challengeOf(new URL(c.req.url).pathname));
  };
}

/** The 401 challenge (RFC 9110 section 11.6.1): the X-Token header, and Bearer where POST /mcp takes it. */
export const TOKEN_CHALLENGE = 'Token header="X-Token"';
export const MCP_CHALLENGE = `${TOKEN_CHALLENGE}, Bearer`;

function challengeOf(path: string): string {
  return path === "/mcp" ? MCP_CHALLENGE : TOKEN_CHALLENGE;
}

/** One structured line per request; never the token, never a body. */
function logRequestOf(c: Context<AppEnv>): void {
  logRequest(c.res.status >= 500 ? "error" : "info", {
    requestId: c.get("requestId"),
    clientRequestId: c.get("clientRequestId"),
    method: c.req.method,
    path: new URL(c.req.url).pathname,
    status: c.res.status,
    latencyMs: Math.round((performance.now() - c.get("startedAt")) * 10) / 10,
  });
}

/** Token lengths after trimming; /openapi.json documents the same bounds (openapi.ts TokenHeader). */
export const MIN_TOKEN_LENGTH = 10;
export const MAX_TOKEN_LENGTH = 256;

/** Resolves X-Token to an active wallet, or to a scoped key and its wallet; else answers 401. */
export const requireWallet: MiddlewareHandler<AppEnv> = async (c, next) => {
  await authenticate(c, c.req.header("x-token"));
  await next();
};

/**
 * Sets the caller's wallet (and key) from a presented token, or throws the 401; a token this
 * instance has not seen is looked up through unknown_tokens.ts, which may answer 401 or 429 itself.
 */
export async function authenticate(c: Context<AppEnv>, presented: string | undefined): Promise<void> {
  const token = presented?.trim();
  if (!token || token.length < MIN_TOKEN_LENGTH || token.length > MAX_TOKEN_LENGTH) {
    throw new HttpError(401, UNAUTHORIZED);
  }
  if (isScopedKey(token)) return await authenticateKey(c, token);
  const walletId = await sha256Hex(token);
  if (!activeWallets.has(walletId)) {
    const { sql } = c.get("services");
    await lookUp(c, walletId, () => findActiveWallet(sql, walletId));
    activeWallets.remember(walletId);
  }
  c.set("walletId", walletId);
}

/**
 * A scoped key: its wallet and id from the cache or by its hash. A revoked key is refused here when
 * the lookup sees it, and always by the ledger, which reads the key under the wallet's lock. A call
 * with an Idempotency-Key looks the key up afresh, since a kept answer is replayed before that read.
 */
async function authenticateKey(c: Context<AppEnv>, key: string): Promise<void> {
  const hash = await sha256Hex(key);
  let holder = c.req.header("idempotency-key") === undefined ? knownKeys.get(hash) : undefined;
  if (!holder) {
    const { sql } = c.get("services");
    holder = await lookUp(c, hash, () => findKeyByHash(sql, hash), (found) => {
      return found.revoked ? KEY_REVOKED : undefined;
    });
    knownKeys.remember(hash, holder);
  }
  if (holder.expiresAt && holder.expiresAt.getTime() <= c.get("services").clock.now().getTime()) {
    throw new HttpError(401, KEY_EXPIRED);
  }
  c.set("walletId", holder.walletId);
  c.set("key", { keyId: holder.keyId, hash });
}

/** The database lookup of a presented hash, bounded in time, through the client's lookup budget. */
function lookUp<T>(
  c: Context<AppEnv>,
  hash: string,
  query: () => Promise<T | undefined>,
  refusalOf?: (found: T) => string | undefined,
): Promise<T> {
  const { config } = c.get("services");
  return lookUpPresented({
    hash,
    client: clientNetworkOf(c),
    lookupsPerMinute: config.unknownTokenLookupsPerMinute,
    find: () => withDeadline(query(), config.databaseTimeoutMs, "unchanged"),
    refusalOf,
  });
}

/** The client address: the socket peer, or the first X-Forwarded-For hop behind a trusted proxy. */
export function clientIp(c: Context<AppEnv>): string {
  if (c.get("services").config.trustProxy) {
    const first = c.req.header("x-forwarded-for")?.split(",")[0]?.trim();
    if (first) return first;
  }
  return c.env?.remoteAddr?.hostname ?? "unknown";
}

/** The client the per-client limits count: the address's network (client_network.ts). */
export function clientNetworkOf(c: Context<AppEnv>): string {
  return clientNetwork(clientIp(c), c.get("services").config.tokenIpv6Prefix);
}
