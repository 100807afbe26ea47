// GET /token/ledger and GET /token/usage (issue 14): where the credits went, free so that an empty
// wallet can still look, and limited per wallet to VIEW_CALLS_PER_MINUTE calls a minute (a budget
// GET /schedule-preview shares).
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { billed, billing } from "../billing.ts";
import { requireWallet } from "../middleware.ts";
import { VIEWS } from "../../calls/prices.ts";
import { billedRoute, ERROR_RESPONSES, errorResponseDoc, jsonOk, serve } from "../openapi.ts";
import { USAGE_TYPES } from "../../../projections/daily_usage.ts";
import { VIEW_CALLS_PER_MINUTE } from "../../wallets/view_limit.ts";
import { DEFAULT_LEDGER_LIMIT } from "../../wallets/ledger_page.ts";
import { CSV_HEADER, DEFAULT_USAGE_DAYS } from "../../wallets/usage_report.ts";
import { walletCalls } from "../../wallets/calls.ts";
import { LedgerQuery, UsageQuery } from "../../wallets/view_queries.ts";

const LedgerEntry = z.object({
  at: z.string().openapi({ format: "date-time" }),
  type: z.enum(["grant", "purchase", "debit", "adjustment"]).openapi({
    description: "grant: the credits a new wallet starts with; purchase: a payment; debit: a call, email " +
      "or run; adjustment: credits added by the operator",
  }),
  amount: z.number().int().openapi({ description: "Signed: positive in, negative out" }),
  balance: z.number().int().openapi({ description: "The balance after the movement" }),
  ref: z.string().openapi({
    description: "The call id (as in /token/logs), payment id, email Message-ID, run " +
      "(`webhookId@plannedAt`) or grant reason",
  }),
  endpoint: z.string().nullable().openapi({ description: "The usage type of the call; null for grants" }),
}).openapi("LedgerEntry");

const UsageCounts = z.object({
  calls: z.number().int(),
  credits: z.number().int().openapi({ description: "Credits charged (deliveries and payments: 0)" }),
  errors: z.number().int().openapi({ description: "Calls answered 400 or above; failed deliveries" }),
}).openapi("UsageCounts");

const UsageDay = z.object({
  date: z.string().openapi({ format: "date", description: "UTC day" }),
  byType: z.record(z.string(), UsageCounts).openapi({
    description: `The types with calls that day, of ${USAGE_TYPES.join(", ")}`,
  }),
}).openapi("UsageDay");

export const BILLING_HEADERS = {
  "X-Balance": { description: "The balance", required: true, schema: { type: "integer" as const } },
  "X-Cost": { description: "Always 0", required: true, schema: { type: "integer" as const, const: 0 } },
};

export const FREE_VIEW_ERRORS = {
  400: ERROR_RESPONSES[400],
  401: ERROR_RESPONSES[401],
  405: ERROR_RESPONSES[405],
  429: {
    ...errorResponseDoc(
      `\`Too Many Requests\`: more than ${VIEW_CALLS_PER_MINUTE} calls to /token/ledger, ` +
        "/token/usage and /schedule-preview in a minute",
    ),
    headers: {
      ...BILLING_HEADERS,
      "Retry-After": {
        description: "Seconds until a call fits",
        required: true,
        schema: { type: "integer" as const, minimum: 1 },
      },
    },
  },
  503: ERROR_RESPONSES[503],
};

export const FREE_NOTE =
  `Free (X-Cost 0, so an empty wallet can call it); at most ${VIEW_CALLS_PER_MINUTE} calls a ` +
  "minute per wallet to /token/ledger, /token/usage and /schedule-preview together, then 429 with Retry-After.";

const ledger = billedRoute({
  method: "get",
  path: "/token/ledger",
  operationId: "listLedger",
  summary: "Every credit movement of the wallet, newest first",
  description: "From the event log, back to the wallet's first day. A page looks at most at 1000 events " +
    "of the log, so it may hold fewer than `limit` entries with a `nextCursor`; `nextCursor` is null on " +
    "the last page. " + FREE_NOTE,
  middleware: [requireWallet, billing(VIEWS)] as const,
  request: { query: LedgerQuery },
  responses: {
    200: {
      ...jsonOk(
        "A page of entries",
        z.object({ entries: z.array(LedgerEntry), nextCursor: z.string().nullable() }),
      )[200],
      headers: BILLING_HEADERS,
    },
    ...FREE_VIEW_ERRORS,
  },
});

const usage = billedRoute({
  method: "get",
  path: "/token/usage",
  operationId: "getUsage",
  summary: "Calls, credits and errors per UTC day and endpoint type",
  description:
    "Every day of the range, oldest first. With `Accept: text/csv` or `format=csv`: CSV with the " +
    `header \`${CSV_HEADER}\`, one line per day and type with calls. ` + FREE_NOTE,
  middleware: [requireWallet, billing(VIEWS)] as const,
  request: { query: UsageQuery },
  responses: {
    200: {
      description: "The usage of the last `days` days",
      headers: BILLING_HEADERS,
      content: {
        "application/json": { schema: z.object({ days: z.array(UsageDay) }) },
        "text/csv": { schema: z.string() },
      },
    },
    ...FREE_VIEW_ERRORS,
  },
});

/** CSV when asked by the query, else when the Accept header names it. */
function wantsCsv(c: Context<AppEnv>, format: string | undefined): boolean {
  if (format) return format === "csv";
  return (c.req.header("accept") ?? "").toLowerCase().includes("text/csv");
}

export function usageRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, ledger, (c) => {
    const { limit, cursor } = c.req.valid("query");
    return billed(
      c,
      walletCalls.ledger({
        walletId: c.get("walletId")!,
        limit: Number(limit ?? DEFAULT_LEDGER_LIMIT),
        ...(cursor ? { before: Number(cursor) } : {}),
      }),
    );
  });

  serve(app, usage, (c) => {
    const { days, format } = c.req.valid("query");
    const options = { days: Number(days ?? DEFAULT_USAGE_DAYS), csv: wantsCsv(c, format) };
    return billed(c, walletCalls.usage({ walletId: c.get("walletId")!, ...options }));
  });
}
