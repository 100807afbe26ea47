// The key-value tools: each mirrors its REST call (src/http/routes/kv.ts) with the same field
// rules (src/kv/schemas.ts), call log and billed call (src/kv/calls.ts: price, key access, reads
// and decision). A new KV call becomes a tool by one more entry here. Arguments are JSON, so they
// can spell what REST's path and body cannot ("\ud800"): every one is checked to be storable, as
// REST checks its parameters (parseParameters) and its body (parseStorable).
import { z } from "zod";
import { kvCalls } from "../kv/calls.ts";
import { decodeCursor, MAX_LIST_LIMIT } from "../kv/listing.ts";
import { ETAG_CONDITION, ETAG_CONDITION_RULE, parseEtagCondition } from "../kv/preconditions.ts";
import { KV } from "../calls/prices.ts";
import { KvBucketPath, KvIncrQuery, KvListQuery, KvPath, KvValue, KvWriteQuery } from "../kv/schemas.ts";
import { type Parsed, parseParameters, parseStorable } from "../parsed.ts";
import { kvAccess } from "../calls/key_access.ts";
import { type BilledTool, billedTool, unlessRefused } from "./billed_tool.ts";

const bucket = z.string().describe('Bucket: 1 to 30 characters, no "/", not starting with "reserved-"');
const key = z.string().describe('Key: 1 to 30 characters, no "/"');
const ttl = z.number().optional().describe(
  "Seconds to live, an integer from 0 to 2592000; 0 or absent: 30 days",
);
const costs = `Costs ${KV.price} credit, whatever the outcome (except 402)`;

/**
 * The REST path of a key or bucket, its names escaped as a client would send them. An unpaired
 * surrogate, which no URL can carry (encodeURIComponent throws), is written as U+FFFD, as
 * URLSearchParams writes it: the call is refused, and its log still shows where it went.
 */
function kvPath(names: string[], query: Record<string, string | number | undefined> = {}): string {
  const given = Object.entries(query).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]);
  const search = given.length ? `?${new URLSearchParams(given)}` : "";
  return `/kv/${names.map((name) => encodeURIComponent(name.toWellFormed())).join("/")}${search}`;
}

/** A tool's REST call: KV's billing, its method and path, and what it needs of a scoped key (as REST's). */
function restCall(method: string, bucket: string, path: string) {
  return { billing: KV, method, path, access: kvAccess(method, bucket) };
}

/** The first refusal in REST's order (path, then query, then headers and body), or every value. */
function allOk<T extends unknown[]>(...parsed: { [I in keyof T]: Parsed<T[I]> }): Parsed<T> {
  for (const one of parsed) if (!one.ok) return one;
  return { ok: true, value: parsed.map((one) => (one as { value: unknown }).value) as T };
}

/** The query rules of REST, applied to a number argument as its text. */
const asQuery = (value: number | undefined) => value === undefined ? undefined : String(value);

/** If-Match as the header takes it; a bare version (42) is the strong ETag "42" that kv_get answers. */
function ifMatchOf(value: string | undefined): Parsed<string | undefined> {
  if (value === undefined) return { ok: true, value };
  const header = /^\d+$/.test(value) ? `"${value}"` : value;
  return ETAG_CONDITION.test(header) ? { ok: true, value: header } : {
    ok: false,
    phrase: `Invalid ifMatch: ${ETAG_CONDITION_RULE}`,
  };
}

const kvGet = billedTool({
  name: "kv_get",
  description: `Read a key's value and its etag (GET /kv/{bucket}/{key}). ${costs}.`,
  input: { bucket, key },
  annotations: { readOnlyHint: true },
  call(args, walletId) {
    const at = restCall("GET", args.bucket, kvPath([args.bucket, args.key]));
    return unlessRefused(
      parseParameters(KvPath, args),
      at,
      (names) => kvCalls.get({ walletId, ...names }),
    );
  },
});

const kvSet = billedTool({
  name: "kv_set",
  description: `Write a value (POST /kv/{bucket}/{key}?ttl=); a write sets a fresh TTL. With ifMatch, ` +
    `only if the entry is unchanged since the read that gave that etag, else 412. ${costs}.`,
  input: {
    bucket,
    key,
    value: z.string().describe("Any text without U+0000, at most 1000 characters"),
    ttl,
    ifMatch: z.string().optional().describe(
      'The etag kv_get answered, e.g. "42" (or * for any existing entry)',
    ),
  },
  annotations: { destructiveHint: true },
  call(args, walletId) {
    const at = restCall("POST", args.bucket, kvPath([args.bucket, args.key], { ttl: args.ttl }));
    const parsed = allOk(
      parseParameters(KvPath, { bucket: args.bucket, key: args.key }),
      parseParameters(KvWriteQuery, { ttl: asQuery(args.ttl) }),
      ifMatchOf(args.ifMatch),
      parseStorable(KvValue, args.value, "value"),
    );
    return unlessRefused(parsed, at, ([names, query, ifMatch, value]) => {
      const conditions = ifMatch === undefined ? undefined : { ifMatch: parseEtagCondition(ifMatch) };
      const write = { value, ttlSeconds: Number(query.ttl ?? 0), conditions };
      return kvCalls.set({ walletId, ...names, ...write });
    });
  },
});

const kvDelete = billedTool({
  name: "kv_delete",
  description: `Delete a key (DELETE /kv/{bucket}/{key}). ${costs}.`,
  input: { bucket, key },
  annotations: { destructiveHint: true, idempotentHint: true },
  call(args, walletId) {
    const at = restCall("DELETE", args.bucket, kvPath([args.bucket, args.key]));
    return unlessRefused(
      parseParameters(KvPath, args),
      at,
      (names) => kvCalls.delete({ walletId, ...names }),
    );
  },
});

const kvIncr = billedTool({
  name: "kv_incr",
  description: "Add to a key's integer value atomically and answer the new value (POST " +
    "/kv/{bucket}/{key}/incr?by=&ttl=). A missing key counts as 0 and gets ttl; an existing key keeps its " +
    `expiry; a value that is not an integer is 409. ${costs}.`,
  input: {
    bucket,
    key,
    by: z.number().optional().describe("What to add, an integer, may be negative; default 1"),
    ttl,
  },
  call(args, walletId) {
    const path = kvPath([args.bucket, args.key, "incr"], { by: args.by, ttl: args.ttl });
    const at = restCall("POST", args.bucket, path);
    const parsed = allOk(
      parseParameters(KvPath, { bucket: args.bucket, key: args.key }),
      parseParameters(KvIncrQuery, { by: asQuery(args.by), ttl: asQuery(args.ttl) }),
    );
    return unlessRefused(parsed, at, ([names, query]) => {
      const increment = { by: Number(query.by ?? 1), ttlSeconds: Number(query.ttl ?? 0) };
      return kvCalls.incr({ walletId, ...names, ...increment });
    });
  },
});

const kvList = billedTool({
  name: "kv_list",
  description: "List a bucket's live keys in key order, one page per call (GET " +
    "/kv/{bucket}?prefix=&limit=&cursor=): {keys: [{key, expiresAt, size}], nextCursor}; pass nextCursor " +
    `back as cursor until it is null. ${costs} per page.`,
  input: {
    bucket,
    prefix: z.string().optional().describe("Only keys that start with it"),
    limit: z.number().optional().describe(
      `Most keys in the page, 1 to ${MAX_LIST_LIMIT}; default ${MAX_LIST_LIMIT}`,
    ),
    cursor: z.string().optional().describe("The nextCursor of the previous page"),
  },
  annotations: { readOnlyHint: true },
  call(args, walletId) {
    const query = { prefix: args.prefix, limit: asQuery(args.limit), cursor: args.cursor };
    const at = restCall("GET", args.bucket, kvPath([args.bucket], query));
    const parsed = allOk(
      parseParameters(KvBucketPath, { bucket: args.bucket }),
      parseParameters(KvListQuery, query),
    );
    const resumed = parsed.ok && args.cursor !== undefined
      ? decodeCursor(args.cursor, args.bucket, args.prefix ?? "")
      : { after: undefined };
    const checked: Parsed<string | undefined> = "phrase" in resumed
      ? { ok: false, phrase: resumed.phrase }
      : parsed.ok
      ? { ok: true, value: resumed.after }
      : parsed;
    return unlessRefused(checked, at, (after) => {
      const listing = {
        bucket: args.bucket,
        prefix: args.prefix ?? "",
        after,
        limit: Number(query.limit ?? MAX_LIST_LIMIT),
      };
      return kvCalls.list({ walletId, ...listing });
    });
  },
});

export const KV_TOOLS: BilledTool[] = [kvGet, kvSet, kvDelete, kvIncr, kvList];
