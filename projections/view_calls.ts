// The times of each wallet's latest calls to its free views (GET /token/ledger and /token/usage):
// the state of their per-wallet rate limit, read under the wallet's lock so it holds across instances.
import type { StoredEvent } from "../events/catalogue.ts";
import type { Queryable } from "../src/db/connect.ts";
import { type Projection, rowRead } from "./projection.ts";

/** The free views share one budget per wallet. */
export const FREE_VIEW_PATHS: readonly string[] = ["/token/ledger", "/token/usage"];
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
 * Appends each wallet's new call times to its stored ones and keeps the latest
 * VIEW_CALLS_PER_MINUTE, in one statement for a whole transaction.
 */
async function appendCalls(tx: Queryable, rows: ViewCallsRow[]): Promise<void> {
  const byWallet = new Map<string, string[]>();
  for (const row of rows) byWallet.set(row.wallet_id, [...byWallet.get(row.wallet_id) ?? [], ...row.recent]);
  if (byWallet.size === 0) return;
  const added = [...byWallet].map(([wallet_id, recent]) => ({
    wallet_id,
    recent: recent.slice(-VIEW_CALLS_PER_MINUTE),
  }));
  await tx`
    insert into view_calls (wallet_id, recent)
    select wallet_id, recent from jsonb_to_recordset(${
    tx.json(added as any)
  }) as x(wallet_id text, recent jsonb)
    on conflict (wallet_id) do update set recent = (
      select coalesce(jsonb_agg(t order by n), '[]'::jsonb) from (
        select t, n from jsonb_array_elements(view_calls.recent || excluded.recent) with ordinality as e(t, n)
        order by n desc limit ${VIEW_CALLS_PER_MINUTE}
      ) kept)`;
}

/**
 * evolve(undefined, event) is the call's own time and evolve(row, event) appends it, so the ledger
 * writes a transaction's calls in one statement at its end (saveMany) that appends them alike.
 * The batch's commands read the row through viewCallsRead, which BatchReads keeps current. Its
 * rows leave with a deactivated wallet; that also makes replay fold them rather than stream them.
 */
export const viewCallsProjection: Projection<ViewCallsRow> = {
  table: "view_calls",
  columns: ["wallet_id", "recent"],
  keyColumns: ["wallet_id"],
  keyOf: (event) => countedViewCall(event) ? event.walletId : null,
  evolve(row, event) {
    if (!countedViewCall(event)) return row;
    const recent = [...row?.recent ?? [], event.recordedAt.toISOString()];
    return { wallet_id: event.walletId, recent: recent.slice(-VIEW_CALLS_PER_MINUTE) };
  },
  readsPrevious: false,
  async save(tx, _event, row) {
    if (row) await appendCalls(tx, [row]);
  },
  saveMany: appendCalls,
  removedWithWallet: true,
};

/** A wallet's latest free-view calls as a ledger read, current with the batch's own calls. */
export const viewCallsRead = rowRead<string, ViewCallsRow>(viewCallsProjection, {
  name: "view calls",
  id: (walletId) => walletId,
  async load(sql, walletIds) {
    const rows = await sql<ViewCallsRow[]>`
      select wallet_id, recent from view_calls where wallet_id = any(${walletIds})`;
    return new Map(rows.map((row) => [row.wallet_id, row]));
  },
});
