// What a key-value call needs of a scoped key, read from the call itself: `read` for GET and HEAD
// (a value, a list), `write` for anything else (POST, DELETE, incr), and the bucket it touches.
// Stated once for every transport: REST reads it from the request, MCP from the tool's REST call.
import type { KeyAccess } from "./key_gate.ts";
import { storableText } from "../storable_text.ts";

/** A call as its key access sees it: the method and the path without its query string. */
export interface CallTarget {
  method: string;
  pathname: string;
}

/** The bucket of a /kv/{bucket}/... path as the router decodes it; undefined when it cannot be decoded. */
export function bucketOfPath(path: string): string | undefined {
  if (!path.startsWith("/kv/")) return undefined;
  const segment = path.slice("/kv/".length).split("/")[0];
  try {
    return storableText(decodeURIComponent(segment));
  } catch {
    return undefined;
  }
}

/** The access of a key-value call by its method, in `bucket` (shown storable: the gate's 403 names it). */
export function kvAccess(method: string, bucket: string | undefined): KeyAccess {
  return {
    need: method === "GET" || method === "HEAD" ? "read" : "write",
    bucket: bucket === undefined ? undefined : storableText(bucket),
  };
}

/** kvAccess of a /kv/... call, its bucket read from the path. */
export function kvKeyAccess(target: CallTarget): KeyAccess {
  return kvAccess(target.method, bucketOfPath(target.pathname));
}
