// The times of each wallet's latest calls to its free views (GET /token/ledger, /token/usage and
// /schedule-preview):
// the state of their per-wallet rate limit, read under the wallet's lock so it holds across instances.
import type { StoredEvent } from "../events/catalogue.ts";
import { defineProjection, rowRead } from "./projection.ts";

/** The free views share one budget per wallet. */
export const FREE_VIEW_PATHS: readonly string[] = ["/token/ledger", "/token/usage", "/schedule-preview"];
export const VIEW_CALLS_PER_MINUTE = 30;
const TOO_MANY_REQUESTS = 429;

export interface ViewCallsRow {
  wallet_id: string;
  /** ISO times of the latest counted calls, oldest first: as many as the limit looks at. */
  recent: string[];
}

/** A call to a free view that counts against its limit: every one but those it refused. */
function countedViewCall(event: StoredEvent): boolean {
  if (event.type !== "CallBilled" || event.data.endpoint !== "token") return false;
  const path = event.data.path.split("?")[0];
  return FREE_VIEW_PATHS.includes(path) && event.data.status !== TOO_MANY_REQUESTS;
}

/**
 * evolve(row, event) appends the call's time and keeps the latest VIEW_CALLS_PER_MINUTE; the ledger
 * loads a wallet's row when its batch has such calls. The batch's commands read the row through
 * viewCallsRead, which BatchReads keeps current. Its rows leave with a deactivated wallet.
 */
export const viewCallsProjection = defineProjection<ViewCallsRow>({
  table: "view_calls",
  columns: ["wallet_id", "recent"],
  keyColumns: ["wallet_id"],
  keyRow: (event) => countedViewCall(event) ? { wallet_id: event.walletId } : null,
  evolve(row, event) {
    if (!countedViewCall(event)) return row;
    const recent = [...row?.recent ?? [], event.recordedAt.toISOString()];
    return { wallet_id: event.walletId, recent: recent.slice(-VIEW_CALLS_PER_MINUTE) };
  },
  readsPrevious: true,
  removedWithWallet: true,
});

/** A wallet's latest free-view calls as a ledger read, current with the batch's own calls. */
export const viewCallsRead = rowRead<string, ViewCallsRow>(viewCallsProjection, {
  name: "view calls",
  keyRow: (walletId) => ({ wallet_id: walletId }),
  async load(sql, walletIds) {
    return await sql<ViewCallsRow[]>`
      select wallet_id, recent from view_calls where wallet_id = any(${walletIds})`;
  },
});
