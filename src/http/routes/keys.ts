// POST, GET and DELETE /token/keys: scoped keys that bill the wallet (issue 15), 1 credit each.
// Only the wallet token manages keys; a key calling these routes gets 403 from billing().
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { z as zod } from "zod";
import type { AppEnv } from "../env.ts";
import { billed, billedFailure, billing } from "../billing.ts";
import { requireWallet } from "../middleware.ts";
import { KEYS } from "../../calls/prices.ts";
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
import { documentedJson, readJsonBody } from "../json_body.ts";
import { keptCreation, MAX_ACTIVE_KEYS, newKeyMaterial } from "../../keys/commands.ts";
import { keyCalls } from "../../keys/calls.ts";
import { hasAtMostCodePoints } from "../../code_points.ts";
import { BUCKET_DOC, KvPath } from "../../kv/schemas.ts";

const MAX_NAME_CHARS = 64;
const MAX_BUCKETS = 20;
const MAX_SPEND_CAP = 1e12;

export const KeyInput = zod.strictObject({
  name: zod.string({ error: `must be 1 to ${MAX_NAME_CHARS} characters` })
    .min(1, `must be 1 to ${MAX_NAME_CHARS} characters`)
    .refine((s) => hasAtMostCodePoints(s, MAX_NAME_CHARS), `must be 1 to ${MAX_NAME_CHARS} characters`)
    // deno-lint-ignore no-control-regex
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), "must not contain control characters")
    .meta({ maxLength: MAX_NAME_CHARS, pattern: "^[^\\u0000-\\u001f\\u007f]+$", example: "ci-reader" }),
  scope: zod.enum(["read", "write"], { error: 'must be "read" or "write"' }),
  // Each bucket name follows the key-value rule of its path segment, from its one definition.
  buckets: zod.array(
    zod.string({ error: "must be a bucket name" }).pipe(KvPath.shape.bucket).meta(BUCKET_DOC),
    {
      error: "must be an array of bucket names",
    },
  ).min(1, `must name 1 to ${MAX_BUCKETS} buckets`).max(MAX_BUCKETS, `must name 1 to ${MAX_BUCKETS} buckets`)
    .optional(),
  spendCap: zod.number({ error: `must be an integer from 1 to ${MAX_SPEND_CAP}` })
    .int(`must be an integer from 1 to ${MAX_SPEND_CAP}`)
    .min(1, `must be an integer from 1 to ${MAX_SPEND_CAP}`)
    .max(MAX_SPEND_CAP, `must be an integer from 1 to ${MAX_SPEND_CAP}`).optional(),
  expiresAt: zod.iso.datetime({
    offset: true,
    error: "must be an ISO 8601 date-time such as 2027-01-31T00:00:00Z",
  })
    .optional()
    .meta({ description: "When the key stops working; time-relative: one not in the future is a `400`" }),
}, { error: "must be a JSON object" });

const KeyView = z.object({
  id: z.string(),
  name: z.string(),
  scope: z.enum(["read", "write"]),
  buckets: z.array(z.string()).optional().openapi({ description: "Absent: every bucket" }),
  spendCap: z.number().int().optional().openapi({ description: "Credits over the key's life; absent: none" }),
  expiresAt: z.string().optional().openapi({ format: "date-time" }),
  createdAt: z.string().openapi({ format: "date-time" }),
  spent: z.number().int().openapi({ description: "Credits the key's calls were charged so far" }),
  lastUsedAt: z.string().nullable().openapi({ format: "date-time" }),
  revokedAt: z.string().optional().openapi({ format: "date-time" }),
  state: z.enum(["active", "expired", "revoked"]),
}).openapi("ScopedKey");

const NewKeyView = z.object({
  id: z.string(),
  key: z.string().openapi({
    description: "The key, `k_` + 32 characters: shown this once, stored only as its hash",
  }),
  name: z.string(),
  scope: z.enum(["read", "write"]),
  buckets: z.array(z.string()).optional(),
  spendCap: z.number().int().optional(),
  expiresAt: z.string().optional().openapi({ format: "date-time" }),
  createdAt: z.string().openapi({ format: "date-time" }),
});

const KEY_403 = errorResponseDoc("A scoped key cannot manage keys: the wallet token is needed");

const createKeyRoute = billedRoute({
  method: "post",
  path: "/token/keys",
  operationId: "createScopedKey",
  summary: "Create a scoped key",
  description: "A key authenticates with X-Token like the token and bills the same wallet: `read` allows " +
    "key-value GET and list, `write` adds POST, DELETE and incr, in the listed buckets (all when absent). " +
    `At most ${MAX_ACTIVE_KEYS} active keys. A retry with the same Idempotency-Key answers 409 naming ` +
    "the key made: the secret is never stored. " + BILLING_NOTE,
  middleware: [requireWallet, billing(KEYS)] as const,
  request: { body: documentedJson(KeyInput, "The key's name and rules") },
  responses: {
    ...BODY_REFUSED,
    ...jsonOk("The new key, with its secret", NewKeyView),
    ...ERROR_RESPONSES,
    403: KEY_403,
    409: errorResponseDoc("A retry of a creation with its Idempotency-Key: the key made, without its secret"),
  },
});

const listKeysRoute = billedRoute({
  method: "get",
  path: "/token/keys",
  operationId: "listScopedKeys",
  summary: "List the scoped keys",
  description: "Every key, oldest first, with its spend and last use; never a secret. Keys revoked or " +
    "expired more than 7 days ago are gone. " + BILLING_NOTE,
  middleware: [requireWallet, billing(KEYS)] as const,
  responses: {
    ...jsonOk("The keys", z.object({ keys: z.array(KeyView) })),
    ...ERROR_RESPONSES,
    403: KEY_403,
  },
});

const KeyIdPath = z.object({
  id: z.string().min(1).max(64).openapi({
    param: { name: "id", in: "path" },
    example: "key_0123456789abcdef",
  }),
});

const revokeKeyRoute = billedRoute({
  method: "delete",
  path: "/token/keys/{id}",
  operationId: "revokeScopedKey",
  summary: "Revoke a scoped key",
  description: "At once, on every instance: the key's next call gets 401 `Key revoked`. " + BILLING_NOTE,
  middleware: [requireWallet, billing(KEYS)] as const,
  request: { params: KeyIdPath },
  responses: {
    ...textOk("`OK`, also for a key revoked already"),
    ...ERROR_RESPONSES,
    403: KEY_403,
    404: errorResponseDoc('`Key "<id>" not found`'),
  },
});

export function keyRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, createKeyRoute, async (c) => {
    const input = await readJsonBody(c, KeyInput);
    if (!input.ok) return billedFailure(c, 400, input.phrase);
    const material = await newKeyMaterial();
    const call = keyCalls.create({ walletId: c.get("walletId")!, request: input.value, material });
    return billed(c, call, { keptAs: keptCreation });
  });

  serve(app, listKeysRoute, (c) => billed(c, keyCalls.list({ walletId: c.get("walletId")! })));

  serve(app, revokeKeyRoute, (c) => {
    const keyId = c.req.valid("param").id;
    return billed(c, keyCalls.revoke({ walletId: c.get("walletId")!, keyId }));
  });
}
