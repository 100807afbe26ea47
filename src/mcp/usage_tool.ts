// usage_summary: GET /token/usage as a tool, free and limited like the REST view (the same reads,
// rate limit and report), and, like it, for the wallet token only: a scoped key gets REST's 403.
import { z } from "zod";
import { walletCalls } from "../wallets/calls.ts";
import { DEFAULT_USAGE_DAYS } from "../wallets/usage_report.ts";
import { MAX_USAGE_DAYS } from "../../projections/daily_usage.ts";
import { UsageQuery } from "../wallets/view_queries.ts";
import { VIEWS } from "../calls/prices.ts";
import { parseWith } from "../parsed.ts";
import { billedTool, unlessRefused } from "./billed_tool.ts";

export const usageSummary = billedTool({
  name: "usage_summary",
  description: "Calls, credits and errors per UTC day and endpoint type (GET /token/usage?days=). Free, " +
    "and limited with the ledger and usage views to 30 calls a minute per wallet. Wallet token only.",
  input: {
    days: z.number().optional().describe(
      `How many UTC days back, an integer from 1 to ${MAX_USAGE_DAYS}; default ${DEFAULT_USAGE_DAYS}`,
    ),
  },
  annotations: { readOnlyHint: true },
  call(args, walletId) {
    const days = args.days === undefined ? undefined : String(args.days);
    const query = days === undefined ? "" : `?${new URLSearchParams({ days })}`;
    // No key access: a scoped key may not read the wallet's usage, as over REST.
    const at = { billing: VIEWS, method: "GET", path: `/token/usage${query}` };
    return unlessRefused(
      parseWith(UsageQuery, { days }),
      at,
      (parsed) =>
        walletCalls.usage({ walletId, days: Number(parsed.days ?? DEFAULT_USAGE_DAYS), csv: false }),
    );
  },
});
