// A path whose percent-escapes do not decode to UTF-8 (`%ZZ`, `a%C3`) is bad input: Hono would
// keep such an escape literally, so `a%C3` and `a%25C3` would name the same key.
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import { InputRefused } from "./input_refused.ts";
import { quoteInput } from "../storable_text.ts";

/** The path of a request URL as sent, escapes and all (Hono's `c.req.path` is decoded). */
export function rawPath(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const query = url.indexOf("?", start);
  return url.slice(start, query === -1 ? undefined : query);
}

/** Whether every percent-escape of `path` is two hex digits and together they spell UTF-8. */
export function isStrictPath(path: string): boolean {
  if (!path.includes("%")) return true;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

function refusal(path: string): InputRefused {
  return new InputRefused(400, `Invalid path ${quoteInput(path)}: percent-escapes must be valid UTF-8`, true);
}

/**
 * Refuses such paths with a free 400 before routing, except in the billed areas (`billedArea`),
 * whose routes authenticate first and check the path themselves with `strictRoutePath`.
 */
export function strictPath(billedArea: (path: string) => boolean): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const path = rawPath(c.req.url);
    if (isStrictPath(path) || billedArea(path)) return await next();
    throw refusal(path);
  };
}

/** In a billed route, after requireWallet and billing(): a broken escape is a billed 400. */
export const strictRoutePath: MiddlewareHandler<AppEnv> = async (c, next) => {
  const path = rawPath(c.req.url);
  if (!isStrictPath(path)) throw refusal(path);
  await next();
};
