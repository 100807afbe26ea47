// One builder per billed call of the wallet itself (spec 4.2, issue 14): GET /token, GET /recharge,
// GET /token/logs, DELETE /token and the free views GET /token/ledger and GET /token/usage (the
// rate limit first). Each gives its price, reads and decision; none is open to scoped keys. The
// REST routes, the usage_summary tool and the decision specs make their calls here.
import { read } from "../ledger/reads.ts";
import { answer, jsonReply } from "../calls/reply.ts";
import { billedCall } from "../calls/billed_call.ts";
import { ERASE, RECHARGE, TOKEN, VIEWS } from "../calls/prices.ts";
import { viewCallsRead } from "../../projections/view_calls.ts";
import { dailyUsageRead } from "../../projections/daily_usage.ts";
import { type LogEndpoint, newestCallLogsRead } from "../../projections/call_logs.ts";
import { creditMovementsRead } from "../../events/credit_movements.ts";
import { callLogPage, rechargeLink, walletInfo } from "./commands.ts";
import { type ErasedCounts, erasure } from "./erasure.ts";
import { withinViewLimit } from "./view_limit.ts";
import { ledgerPage } from "./ledger_page.ts";
import { usageReport } from "./usage_report.ts";

export const walletCalls = {
  /** GET /token: the balance after this call, creation time and hash. */
  info() {
    return billedCall({ price: TOKEN.price, decide: ({ wallet }) => walletInfo(wallet, TOKEN.price) });
  },

  /** GET /recharge: the tier's payment link with the token as client_reference_id; free. */
  recharge({ link, token }: { link: string; token: string }) {
    return billedCall({ price: RECHARGE.price, decide: () => rechargeLink(link, token) });
  },

  /**
   * GET /token/logs: the newest entries, of one endpoint type when given, the free views' only with
   * `views`; one credit per entry.
   */
  logs({ walletId, limit, endpoint, views }: {
    walletId: string;
    limit: number;
    endpoint?: LogEndpoint;
    views?: boolean;
  }) {
    return billedCall({
      price: TOKEN.price,
      reads: { newest: read(newestCallLogsRead, { walletId, limit, endpoint, ...(views ? { views } : {}) }) },
      decide: ({ wallet, reads }) => callLogPage(wallet, reads.newest ?? []),
    });
  },

  /** DELETE /token: the wallet erased by its owner, answering what it held (counted just before). */
  erase({ walletId, counts }: { walletId: string; counts: ErasedCounts }) {
    return billedCall({
      price: ERASE.price,
      decide: () => answer(jsonReply(200, { hash: walletId, ...counts }), erasure(walletId, "owner", counts)),
    });
  },

  /** GET /token/ledger: a page of the ledger; `before` is the cursor of an earlier page, absent for the newest. */
  ledger({ walletId, limit, before }: { walletId: string; limit: number; before?: number }) {
    return billedCall({
      price: VIEWS.price,
      reads: {
        calls: read(viewCallsRead, walletId),
        page: read(creditMovementsRead, { walletId, ...(before !== undefined ? { before } : {}) }),
      },
      decide: ({ reads, now }) => withinViewLimit(reads.calls, now, () => ledgerPage(reads.page, limit)),
    });
  },

  /** GET /token/usage: the usage of the last `days` UTC days, as JSON or CSV. */
  usage({ walletId, ...options }: { walletId: string; days: number; csv: boolean }) {
    return billedCall({
      price: VIEWS.price,
      reads: { calls: read(viewCallsRead, walletId), usage: read(dailyUsageRead, walletId) },
      decide: ({ reads, now }) =>
        withinViewLimit(reads.calls, now, () => usageReport(reads.usage, { ...options, now })),
    });
  },
};
