// The key-value routes, 1 credit each (spec 4.1, CONTRACT section 5, issue 15): read, write and
// delete a key, conditional writes (ETag, If-Match, If-None-Match), atomic increments, and listing
// a bucket's keys.
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { billed, billedFailure, billing } from "../billing.ts";
import { requireWallet } from "../middleware.ts";
import { KV, KV_BUCKETS } from "../../calls/prices.ts";
import {
  billedRoute,
  BILLING_NOTE,
  BODY_REFUSED,
  ERROR_RESPONSES,
  errorResponseDoc,
  jsonOk,
  serve,
  textOk,
} from "../openapi.ts";
import { parseWith } from "../../parsed.ts";
import { kvCalls } from "../../kv/calls.ts";
import { decodeCursor, MAX_LIST_LIMIT } from "../../kv/listing.ts";
import { decodeBucketCursor } from "../../kv/bucket_listing.ts";
import { parseEtagCondition, type Preconditions } from "../../kv/preconditions.ts";
import { readTextBody } from "../body.ts";
import { strictRoutePath } from "../strict_path.ts";
import {
  EntryEtagHeader,
  KvBucketPath,
  KvBucketsAnswer,
  KvBucketsQuery,
  KvConditionHeaders,
  KvIncrQuery,
  KvListAnswer,
  KvListQuery,
  KvPath,
  KvValue,
  KvWriteQuery,
} from "../../kv/schemas.ts";

const MAX_VALUE_BYTES = 4 * 1024;
const notFound = { 404: errorResponseDoc("`Key Not Found`") };
const preconditionFailed = {
  412: errorResponseDoc(
    "`Precondition Failed: ...`: If-Match or If-None-Match does not hold; charged, nothing changes",
  ),
};

const getKv = billedRoute({
  method: "get",
  path: "/kv/{bucket}/{key}",
  operationId: "getValue",
  summary: "Read a value",
  description: `${BILLING_NOTE} The answer carries the entry's ETag.`,
  middleware: [requireWallet, billing(KV), strictRoutePath] as const,
  request: { params: KvPath },
  responses: {
    200: { ...textOk("The stored value")[200], headers: EntryEtagHeader },
    ...ERROR_RESPONSES,
    ...notFound,
  },
});

const postKv = billedRoute({
  method: "post",
  path: "/kv/{bucket}/{key}",
  operationId: "setValue",
  summary: "Write a value",
  description: `${BILLING_NOTE} With If-Match or If-None-Match the write is conditional.`,
  middleware: [requireWallet, billing(KV), strictRoutePath] as const,
  request: {
    params: KvPath,
    headers: KvConditionHeaders,
    query: KvWriteQuery,
    body: { required: false, content: { "text/plain": { schema: KvValue } } },
  },
  responses: {
    ...BODY_REFUSED,
    ...textOk("`OK`"),
    ...ERROR_RESPONSES,
    ...preconditionFailed,
  },
});

const deleteKv = billedRoute({
  method: "delete",
  path: "/kv/{bucket}/{key}",
  operationId: "deleteValue",
  summary: "Delete a value",
  description: `${BILLING_NOTE} With If-Match the delete is conditional.`,
  middleware: [requireWallet, billing(KV), strictRoutePath] as const,
  request: { params: KvPath, headers: KvConditionHeaders },
  responses: { ...textOk("`OK`"), ...ERROR_RESPONSES, ...notFound, ...preconditionFailed },
});

const incrKv = billedRoute({
  method: "post",
  path: "/kv/{bucket}/{key}/incr",
  operationId: "incrementValue",
  summary: "Add to an integer value, atomically",
  description: `${BILLING_NOTE} A missing key counts as 0 and gets \`ttl\` (default 30 days); an existing ` +
    "key keeps its expiry. Concurrent increments never lose one.",
  middleware: [requireWallet, billing(KV), strictRoutePath] as const,
  request: { params: KvPath, headers: KvConditionHeaders, query: KvIncrQuery },
  responses: {
    ...textOk("The new value, e.g. `42`"),
    ...ERROR_RESPONSES,
    409: errorResponseDoc(
      "The value is not an integer, or the result is outside ±(2^53 − 1); nothing changes",
    ),
    ...preconditionFailed,
  },
});

const listKv = billedRoute({
  method: "get",
  path: "/kv/{bucket}",
  operationId: "listBucketKeys",
  summary: "List a bucket's live keys, in key order",
  description: `${BILLING_NOTE} One page per call, at most \`limit\` keys; follow \`nextCursor\`.`,
  middleware: [requireWallet, billing(KV), strictRoutePath] as const,
  request: { params: KvBucketPath, query: KvListQuery },
  responses: { ...jsonOk("A page of keys", KvListAnswer), ...ERROR_RESPONSES },
});

function preconditionsOf(
  headers: { "if-match"?: string; "if-none-match"?: string },
): Preconditions | undefined {
  const ifMatch = headers["if-match"];
  const ifNoneMatch = headers["if-none-match"];
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  return {
    ...(ifMatch === undefined ? {} : { ifMatch: parseEtagCondition(ifMatch) }),
    ...(ifNoneMatch === undefined ? {} : { ifNoneMatch: parseEtagCondition(ifNoneMatch) }),
  };
}

/** The entry the request's path names, in the caller's wallet. */
const entryOf = (c: Context<AppEnv>, { bucket, key }: { bucket: string; key: string }) => ({
  walletId: c.get("walletId")!,
  bucket,
  key,
});

const listBuckets = billedRoute({
  method: "get",
  path: "/kv",
  operationId: "listBuckets",
  summary: "List the wallet's buckets that hold a live key",
  description: `${BILLING_NOTE} One page per call, at most \`limit\` names; follow \`nextCursor\`. ` +
    "The wallet's token only: a scoped key gets `403`.",
  middleware: [requireWallet, billing(KV_BUCKETS)] as const,
  request: { query: KvBucketsQuery },
  responses: { ...jsonOk("A page of bucket names", KvBucketsAnswer), ...ERROR_RESPONSES },
});

/** A page of the bucket as the wallet's lock sees it, with the batch's earlier writes laid over it. */
function serveListing(app: OpenAPIHono<AppEnv>) {
  serve(app, listBuckets, (c) => {
    const { prefix = "", limit, cursor } = c.req.valid("query");
    const resume = cursor === undefined ? { after: undefined } : decodeBucketCursor(cursor, prefix);
    if ("phrase" in resume) return billedFailure(c, 400, resume.phrase);
    const listing = {
      prefix,
      limit: Number(limit ?? MAX_LIST_LIMIT),
      ...(resume.after ? { after: resume.after } : {}),
    };
    return billed(c, kvCalls.buckets({ walletId: c.get("walletId")!, ...listing }));
  });
  serve(app, listKv, (c) => {
    const { bucket } = c.req.valid("param");
    const { prefix = "", limit, cursor } = c.req.valid("query");
    const resume = cursor === undefined ? { after: undefined } : decodeCursor(cursor, bucket, prefix);
    if ("phrase" in resume) return billedFailure(c, 400, resume.phrase);
    const listing = { bucket, prefix, after: resume.after, limit: Number(limit ?? MAX_LIST_LIMIT) };
    return billed(c, kvCalls.list({ walletId: c.get("walletId")!, ...listing }));
  });
}

export function kvRoutes(app: OpenAPIHono<AppEnv>) {
  // Hono tries routes in the order they are added: every declared route before the catch-all.
  serveListing(app);
  serve(app, getKv, (c) => billed(c, kvCalls.get(entryOf(c, c.req.valid("param")))));

  serve(app, postKv, async (c) => {
    const { ttl } = c.req.valid("query");
    const conditions = preconditionsOf(c.req.valid("header"));
    const value = parseWith(KvValue, await readTextBody(c, MAX_VALUE_BYTES, "value"), "value");
    if (!value.ok) return billedFailure(c, 400, value.phrase);
    const write = { value: value.value, ttlSeconds: Number(ttl ?? 0), conditions };
    return billed(c, kvCalls.set({ ...entryOf(c, c.req.valid("param")), ...write }));
  });

  serve(app, deleteKv, (c) => {
    const conditions = preconditionsOf(c.req.valid("header"));
    return billed(c, kvCalls.delete({ ...entryOf(c, c.req.valid("param")), conditions }));
  });

  serve(app, incrKv, (c) => {
    const { by, ttl } = c.req.valid("query");
    const conditions = preconditionsOf(c.req.valid("header"));
    const increment = { by: Number(by ?? 1), ttlSeconds: Number(ttl ?? 0), conditions };
    return billed(c, kvCalls.incr({ ...entryOf(c, c.req.valid("param")), ...increment }));
  });

  // Paths with the wrong number of segments (an empty name, or a "/" in the key) are bad input,
  // not unknown paths: answered 400 and billed like any KV call.
  app.on(
    ["GET", "POST", "DELETE"],
    "/kv/*",
    requireWallet,
    billing(KV),
    strictRoutePath,
    (c) => billedFailure(c, 400, shapeProblem(c.req.method, c.req.path)),
  );
}

/** Why a /kv/... request that missed the routes is bad, in the words of the field rules. */
export function shapeProblem(method: string, path: string): string {
  const parts = path.slice("/kv/".length).split("/");
  if (parts[0] === "") return "Invalid bucket: must be 1 to 30 characters";
  if (parts.length < 2 || parts[1] === "") return "Invalid key: must be 1 to 30 characters";
  if (parts.length === 3 && parts[2] === "incr" && method !== "POST") {
    return `Invalid method ${method}: /kv/{bucket}/{key}/incr takes POST`;
  }
  return 'Invalid key: must not contain "/"';
}
