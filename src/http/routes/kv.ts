// GET, POST and DELETE /kv/{bucket}/{key}: 1 credit each (spec 4.1, CONTRACT section 5).
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { billed, billedFailure, billing, type RouteBilling } from "../billing.ts";
import { requireWallet } from "../middleware.ts";
import { BILLING_NOTE, ERROR_RESPONSES, serve, textOk, textResponse, TokenHeader } from "../openapi.ts";
import { parseWith } from "../validation.ts";
import { read } from "../../ledger/reads.ts";
import { kvEntryRead } from "../../../projections/kv.ts";
import { deleteValue, MAX_TTL_SECONDS, readValue, writeValue } from "../../kv/commands.ts";
import { readTextBody } from "../body.ts";
import { strictRoutePath } from "../strict_path.ts";
import { hasAtMostCodePoints } from "../../code_points.ts";
import { kvKeyAccess } from "../key_access.ts";

export { MAX_TTL_SECONDS };
const MAX_VALUE_CHARS = 1000;
const MAX_VALUE_BYTES = 4 * 1024;
/** Open to scoped keys: `read` keys GET, `write` keys also POST and DELETE, in their buckets. */
export const KV: RouteBilling = { price: 1, endpoint: "kv", keys: kvKeyAccess };

function kvName(field: string) {
  return z.string()
    .min(1, "must be 1 to 30 characters")
    .refine((s) => hasAtMostCodePoints(s, 30), "must be 1 to 30 characters")
    // deno-lint-ignore no-control-regex
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), "must not contain control characters")
    .refine((s) => !s.includes("/"), 'must not contain "/"')
    .openapi({ param: { name: field, in: "path" }, example: field === "bucket" ? "default" : "greeting" });
}

export const KvPath = z.object({
  bucket: kvName("bucket")
    .refine((s) => !s.startsWith("reserved-"), 'must not start with "reserved-"')
    .refine((s) => !s.endsWith("---"), 'must not end with "---"'),
  key: kvName("key"),
});

export const KvWriteQuery = z.object({
  ttl: z.string()
    .regex(/^\d+$/, `must be an integer from 0 to ${MAX_TTL_SECONDS}`)
    .refine((s) => Number(s) <= MAX_TTL_SECONDS, `must be an integer from 0 to ${MAX_TTL_SECONDS}`)
    .optional()
    .openapi({ description: "Seconds to live; 0 or absent means the maximum, 30 days", example: "3600" }),
});

export const KvValue = z.string()
  .refine((s) => hasAtMostCodePoints(s, MAX_VALUE_CHARS), `must be at most ${MAX_VALUE_CHARS} characters`)
  .openapi({ description: "Any text, at most 1000 characters" });

const request = { params: KvPath, headers: TokenHeader };

const getKv = createRoute({
  method: "get",
  path: "/kv/{bucket}/{key}",
  summary: "Read a value",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(KV), strictRoutePath] as const,
  request,
  responses: { ...textOk("The stored value"), ...ERROR_RESPONSES, 404: textResponse("`Key Not Found`") },
});

const postKv = createRoute({
  method: "post",
  path: "/kv/{bucket}/{key}",
  summary: "Write a value",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(KV), strictRoutePath] as const,
  request: {
    ...request,
    query: KvWriteQuery,
    body: { content: { "text/plain": { schema: KvValue } } },
  },
  responses: { ...textOk("`OK`"), ...ERROR_RESPONSES },
});

const deleteKv = createRoute({
  method: "delete",
  path: "/kv/{bucket}/{key}",
  summary: "Delete a value",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(KV), strictRoutePath] as const,
  request,
  responses: { ...textOk("`OK`"), ...ERROR_RESPONSES, 404: textResponse("`Key Not Found`") },
});

export function kvRoutes(app: OpenAPIHono<AppEnv>) {
  const entryOf = (c: Context<AppEnv>, bucket: string, key: string) => ({
    entry: read(kvEntryRead, { walletId: c.get("walletId")!, bucket, key }),
  });

  serve(app, getKv, (c) => {
    const { bucket, key } = c.req.valid("param");
    return billed(c, { reads: entryOf(c, bucket, key), decide: ({ reads }) => readValue(reads.entry) });
  });

  serve(app, postKv, async (c) => {
    const { bucket, key } = c.req.valid("param");
    const { ttl } = c.req.valid("query");
    const value = parseWith(KvValue, await readTextBody(c, MAX_VALUE_BYTES, "value"), "value");
    if (!value.ok) return billedFailure(c, 400, value.phrase);
    const write = { bucket, key, value: value.value, ttlSeconds: Number(ttl ?? 0) };
    return billed(c, { decide: ({ now }) => writeValue(write, now) });
  });

  serve(app, deleteKv, (c) => {
    const { bucket, key } = c.req.valid("param");
    return billed(c, { reads: entryOf(c, bucket, key), decide: ({ reads }) => deleteValue(reads.entry) });
  });

  // Paths with the wrong number of segments (an empty name, or a "/" in the key) are bad input,
  // not unknown paths: answered 400 and billed like any KV call.
  app.on(
    ["GET", "POST", "DELETE"],
    "/kv/*",
    requireWallet,
    billing(KV),
    strictRoutePath,
    (c) => billedFailure(c, 400, shapeProblem(c.req.path)),
  );
}

/** Why a /kv/... path that missed the route is bad, in the words of the field rules. */
export function shapeProblem(path: string): string {
  const parts = path.slice("/kv/".length).split("/");
  if (parts[0] === "") return "Invalid bucket: must be 1 to 30 characters";
  if (parts.length < 2 || parts[1] === "") return "Invalid key: must be 1 to 30 characters";
  return 'Invalid key: must not contain "/"';
}
