// A path whose percent-escapes do not decode to UTF-8 (`%ZZ`, `a%C3`) is bad input: Hono would
// keep such an escape literally, so `a%C3` and `a%25C3` would name the same key.
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import { InputRefused } from "./input_refused.ts";
import { requireWallet } from "./middleware.ts";

const SHOWN_PATH_CHARS = 100;

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

/**
 * Refuses such paths with 400 before any route reads them. Where the route would authenticate
 * first (`billedArea`), so does this: 401 without a valid token, else a billed 400.
 */
export function strictPath(billedArea: (path: string) => boolean): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const path = new URL(c.req.url).pathname;
    if (isStrictPath(path)) return await next();
    const shown = path.length > SHOWN_PATH_CHARS ? `${path.slice(0, SHOWN_PATH_CHARS)}...` : path;
    const refusal = new InputRefused(
      400,
      `Invalid path "${shown}": percent-escapes must be valid UTF-8`,
      true,
    );
    if (billedArea(path)) await requireWallet(c, () => Promise.resolve());
    throw refusal;
  };
}
