// Cross-cutting concerns: request ids, one JSON log line per request, and authentication.
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv, Services } from "./env.ts";
import { HttpError, UNAUTHORIZED } from "./errors.ts";
import { randomId, sha256Hex } from "../ids.ts";
import { findActiveWallet } from "../../projections/wallets.ts";
import { activeWallets } from "./wallet_cache.ts";
import { log } from "../log.ts";
import { withDeadline } from "../db/deadline.ts";

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export function provideServices(services: Services): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("services", services);
    c.set("startedAt", performance.now());
    const given = c.req.header("x-request-id");
    c.set("requestId", given && REQUEST_ID.test(given) ? given : randomId(20));
    await next();
    c.res.headers.set("x-request-id", c.get("requestId"));
  };
}

/** One structured line per request; never the token, never a body. */
export function accessLog(enabled: boolean): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (!enabled) return;
    log(c.res.status >= 500 ? "error" : "info", "request", {
      requestId: c.get("requestId"),
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      status: c.res.status,
      latencyMs: Math.round((performance.now() - c.get("startedAt")) * 10) / 10,
    });
  };
}

/** Token lengths after trimming; /openapi.json documents the same bounds (openapi.ts TokenHeader). */
export const MIN_TOKEN_LENGTH = 10;
export const MAX_TOKEN_LENGTH = 256;

/** Resolves X-Token to an active wallet, or answers 401. */
export const requireWallet: MiddlewareHandler<AppEnv> = async (c, next) => {
  const token = c.req.header("x-token")?.trim();
  if (!token || token.length < MIN_TOKEN_LENGTH || token.length > MAX_TOKEN_LENGTH) {
    throw new HttpError(401, UNAUTHORIZED);
  }
  const walletId = await sha256Hex(token);
  if (!activeWallets.has(walletId)) {
    const { sql, config } = c.get("services");
    const wallet = await withDeadline(findActiveWallet(sql, walletId), config.databaseTimeoutMs, "unchanged");
    if (!wallet) throw new HttpError(401, UNAUTHORIZED);
    activeWallets.remember(walletId);
  }
  c.set("walletId", walletId);
  await next();
};

/** The client address: the socket peer, or the first X-Forwarded-For hop behind a trusted proxy. */
export function clientIp(c: Context<AppEnv>): string {
  if (c.get("services").config.trustProxy) {
    const first = c.req.header("x-forwarded-for")?.split(",")[0]?.trim();
    if (first) return first;
  }
  return c.env?.remoteAddr?.hostname ?? "unknown";
}
