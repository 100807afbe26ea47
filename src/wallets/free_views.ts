// The free views of a wallet as commands: what GET /token/ledger and GET /token/usage read under
// the wallet's lock and how they decide, the rate limit first.
import type { CallDecision, DecideState } from "../ledger/command.ts";
import { read, type ReadSet } from "../ledger/reads.ts";
import type { Reply } from "../calls/reply.ts";
import { viewCallsRead } from "../../projections/view_calls.ts";
import { dailyUsageRead } from "../../projections/daily_usage.ts";
import { creditMovementsRead } from "../../events/credit_movements.ts";
import { withinViewLimit } from "./view_limit.ts";
import { ledgerPage } from "./ledger_page.ts";
import { usageReport } from "./usage_report.ts";

export interface FreeView<R extends ReadSet> {
  reads: R;
  decide(state: DecideState<R>): CallDecision<Reply>;
}

/** A page of the ledger: `before` is the cursor of an earlier page, absent for the newest. */
export function ledgerView(walletId: string, options: { limit: number; before?: number }) {
  const reads = {
    calls: read(viewCallsRead, walletId),
    page: read(creditMovementsRead, {
      walletId,
      ...(options.before !== undefined ? { before: options.before } : {}),
    }),
  };
  const view: FreeView<typeof reads> = {
    reads,
    decide: ({ reads, now }) =>
      withinViewLimit(reads.calls, now, () => ledgerPage(reads.page, options.limit)),
  };
  return view;
}

/** The usage of the last `days` UTC days, as JSON or CSV. */
export function usageView(walletId: string, options: { days: number; csv: boolean }) {
  const reads = { calls: read(viewCallsRead, walletId), usage: read(dailyUsageRead, walletId) };
  const view: FreeView<typeof reads> = {
    reads,
    decide: ({ reads, now }) =>
      withinViewLimit(reads.calls, now, () => usageReport(reads.usage, { ...options, now })),
  };
  return view;
}
