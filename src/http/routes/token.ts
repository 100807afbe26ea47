// POST /token, GET /token, GET /recharge and GET /token/logs (spec 4.2, CONTRACT sections 2-4).
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { billed, billing } from "../billing.ts";
import { clientNetworkOf, requireWallet } from "../middleware.ts";
import { ERASE, RECHARGE, TOKEN } from "../../calls/prices.ts";
import { errorResponse } from "../errors.ts";
import { openWallet } from "../../wallets/open_wallet.ts";
import { LOG_ENDPOINTS, VIEW_LOG_PATHS } from "../../../projections/call_logs.ts";
import {
  billedRoute,
  BILLING_NOTE,
  BODY_REFUSED,
  ERROR_RESPONSES,
  errorResponseDoc,
  jsonOk,
  publicRoute,
  RETRY_AFTER_HEADER,
  serve,
  textOk,
} from "../openapi.ts";
import { parseWith } from "../../parsed.ts";
import { readTextBody } from "../body.ts";
import { integerParam } from "../../calls/integer_pattern.ts";
import { countsOf } from "../../wallets/erasure.ts";
import { walletCalls } from "../../wallets/calls.ts";

const MAX_FORM_BYTES = 1024;
const MAX_LOG_ENTRIES = 100;

export const NewTokenForm = z.object({
  token: z.literal("new", { error: 'must be "new"' }).openapi({ example: "new" }),
});

const WalletInfo = z.object({
  wallet: z.number().int().openapi({ description: "Balance after this call" }),
  created: z.string().openapi({ format: "date-time" }),
  hash: z.string().openapi({ description: "SHA-256 of the token, lowercase hex" }),
});

export const RechargeQuery = z.object({
  amount: z.enum(["1", "3"], { error: "must be 1 or 3" }).optional()
    .openapi({ description: "Tier in millions of credits", example: "1" }),
});

export const LogsQuery = z.object({
  n: integerParam(1, MAX_LOG_ENTRIES)
    .openapi({ description: `How many entries, 1 to ${MAX_LOG_ENTRIES}, default 5`, example: "5" }),
  type: z.enum(LOG_ENDPOINTS, { error: `must be one of ${LOG_ENDPOINTS.join(", ")}` }).optional(),
  views: z.enum(["exclude", "include"], { error: "must be exclude or include" }).optional().openapi({
    description: `exclude (default): leave out the entries of the free views a console calls by itself ` +
      `(GET ${
        VIEW_LOG_PATHS.join(", ")
      }, free), so the wallet's own calls come first; include: show them too`,
  }),
});

const LogEntry = z.object({
  id: z.string(),
  method: z.string(),
  path: z.string(),
  endpoint: z.string(),
  status_code: z.number().int(),
  response_time_ms: z.number().int(),
  error: z.string().optional(),
  timestamp: z.string().openapi({ format: "date-time" }),
  expiration: z.string().openapi({ format: "date-time" }),
  cost: z.number().int(),
  balance: z.number().int(),
  keyId: z.string().optional().openapi({
    description: "The scoped key that made the call; absent: the token",
  }),
});

const WalletErasure = z.object({
  hash: z.string().openapi({ description: "SHA-256 of the token, lowercase hex: the wallet erased" }),
  kvEntries: z.number().int().openapi({ description: "KV entries deleted" }),
  webhooks: z.number().int().openapi({
    description: "Webhooks and mailboxes deleted (their schedules stop)",
  }),
  keys: z.number().int().openapi({ description: "Scoped keys deleted" }),
  attachments: z.number().int().openapi({ description: "Stored email attachments deleted" }),
});

const eraseToken = billedRoute({
  method: "delete",
  path: "/token",
  operationId: "eraseWallet",
  summary: "Erase the wallet: its data, keys, webhooks and the token",
  description: "Free. Destroys the wallet's data key, so the sensitive fields of its history can never be " +
    "read again; deletes its KV entries, webhooks and mailboxes (their schedules stop, their mail is refused " +
    "with 550), scoped keys, queued deliveries and attachments; the token answers 401 from then on. The " +
    "credit movements stay (amounts only), so the ledger still adds up. Only the wallet token may do it.",
  middleware: [requireWallet, billing(ERASE)] as const,
  responses: { ...jsonOk("What was erased", WalletErasure), ...ERROR_RESPONSES },
});

const createToken = publicRoute({
  method: "post",
  path: "/token",
  operationId: "createToken",
  summary: "Create a token with 100 free credits",
  description: "Free, no authentication; one request per client address every 10 seconds.",
  request: {
    body: {
      content: {
        "application/x-www-form-urlencoded": { schema: NewTokenForm },
        "application/json": { schema: NewTokenForm },
      },
    },
  },
  responses: {
    ...BODY_REFUSED,
    ...textOk("The new token"),
    400: errorResponseDoc("Missing or invalid form field `token`"),
    405: ERROR_RESPONSES[405],
    429: { ...errorResponseDoc("`Too Many Requests`, with Retry-After"), headers: RETRY_AFTER_HEADER },
  },
});

const getToken = billedRoute({
  method: "get",
  path: "/token",
  operationId: "getWallet",
  summary: "Wallet balance, creation time and hash",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(TOKEN)] as const,
  responses: { ...jsonOk("The wallet", WalletInfo), ...ERROR_RESPONSES },
});

const recharge = billedRoute({
  method: "get",
  path: "/recharge",
  operationId: "getRechargeLink",
  summary: "Payment link for a recharge tier",
  description: "Free: X-Cost is 0.",
  middleware: [requireWallet, billing(RECHARGE)] as const,
  request: { query: RechargeQuery },
  responses: { ...textOk("The checkout link with the token as client_reference_id"), ...ERROR_RESPONSES },
});

const logs = billedRoute({
  method: "get",
  path: "/token/logs",
  operationId: "listCallLogs",
  summary: "Newest call log entries",
  description: "Costs 1 credit per entry returned. The free views' own entries only with `views=include`. " +
    BILLING_NOTE,
  middleware: [requireWallet, billing(TOKEN)] as const,
  request: { query: LogsQuery },
  responses: {
    ...jsonOk("Entries, newest first", z.object({ logs: z.array(LogEntry), n: z.number().int() })),
    ...ERROR_RESPONSES,
  },
});

export function tokenRoutes(app: OpenAPIHono<AppEnv>) {
  // Documented from the schema, parsed by hand: the form is what the description asks for, but a
  // body sent without its content type, or as JSON, is read too rather than refused with 415.
  app.openAPIRegistry.registerPath(createToken);
  app.post(createToken.path, async (c) => {
    await readTextBody(c, MAX_FORM_BYTES); // bounded and strict; the parsers below read it again
    const contentType = c.req.header("content-type") ?? "";
    const form = contentType.includes("application/json")
      ? await c.req.json().catch(() => ({}))
      : contentType.includes("multipart/form-data")
      ? await c.req.parseBody().catch(() => ({}))
      : Object.fromEntries(new URLSearchParams(await c.req.text()));
    const parsed = parseWith(NewTokenForm, form);
    if (!parsed.ok) return errorResponse(c, 400, parsed.phrase);
    const opened = await openWallet(c.get("services").ledger, clientNetworkOf(c));
    if (!opened.ok) {
      return errorResponse(c, 429, "Too Many Requests", { "retry-after": String(opened.retryAfterSeconds) });
    }
    return c.text(opened.token, 200);
  });

  serve(app, getToken, (c) => billed(c, walletCalls.info()));

  serve(app, eraseToken, async (c) => {
    const walletId = c.get("walletId")!;
    // Read just before: a write racing the erasure may be missed by the counts, never by the erasure.
    const counts = await countsOf(c.get("services").sql, walletId);
    return billed(c, walletCalls.erase({ walletId, counts }));
  });

  serve(app, recharge, (c) => {
    const { amount = "1" } = c.req.valid("query");
    const link = c.get("services").config.rechargeLinks[amount];
    const token = c.req.header("x-token")!.trim();
    return billed(c, walletCalls.recharge({ link, token }));
  });

  serve(app, logs, (c) => {
    const { n = "5", type, views } = c.req.valid("query");
    const request = {
      walletId: c.get("walletId")!,
      limit: Number(n),
      endpoint: type,
      views: views === "include",
    };
    return billed(c, walletCalls.logs(request));
  });
}
