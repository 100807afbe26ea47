// The query rules of the free views, GET /token/ledger and GET /token/usage: they validate REST's
// query and MCP's usage_summary arguments alike, and are what /openapi.json says of them.
import { z } from "@hono/zod-openapi";
import { MAX_USAGE_DAYS } from "../../projections/daily_usage.ts";
import { MAX_MOVEMENTS } from "../../projections/credit_movements.ts";
import { DEFAULT_LEDGER_LIMIT } from "./ledger_page.ts";
import { DEFAULT_USAGE_DAYS } from "./usage_report.ts";
import { integerParam, integerPattern } from "../calls/integer_pattern.ts";

const MAX_CURSOR = 2 ** 31 - 1;

function countParam(min: number, max: number, fallback: number) {
  return integerParam(min, max)
    .openapi({ description: `${min} to ${max}, default ${fallback}`, example: String(fallback) });
}

export const LedgerQuery = z.object({
  limit: countParam(1, MAX_MOVEMENTS, DEFAULT_LEDGER_LIMIT),
  cursor: z.string()
    .regex(
      integerPattern(1, MAX_CURSOR, { leadingZeros: false }),
      "must be the nextCursor of an earlier page",
    )
    .optional()
    .openapi({ description: "The `nextCursor` of the previous page; absent for the newest entries" }),
});

export const UsageQuery = z.object({
  days: countParam(1, MAX_USAGE_DAYS, DEFAULT_USAGE_DAYS),
  format: z.enum(["json", "csv"], { error: "must be json or csv" }).optional()
    .openapi({ description: "`csv` answers text/csv (as does `Accept: text/csv`)" }),
});
