// What a key-value request needs of a scoped key, read from the request itself: `read` for GET and
// HEAD (a value, a list), `write` for anything else (POST, DELETE, incr), and the bucket it touches.
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import type { KeyAccess } from "../keys/gate.ts";
import { storableText } from "../storable_text.ts";

/** The bucket of a /kv/{bucket}/... path as the router decodes it; undefined when it cannot be decoded. */
export function bucketOfPath(path: string): string | undefined {
  if (!path.startsWith("/kv/")) return undefined;
  const segment = path.slice("/kv/".length).split("/")[0];
  try {
    // The gate's 403 names the bucket: never a "%00" decoded into what storage refuses.
    return storableText(decodeURIComponent(segment));
  } catch {
    return undefined;
  }
}

export function kvKeyAccess(c: Context<AppEnv>): KeyAccess {
  return {
    need: c.req.method === "GET" || c.req.method === "HEAD" ? "read" : "write",
    bucket: bucketOfPath(new URL(c.req.url).pathname),
  };
}
