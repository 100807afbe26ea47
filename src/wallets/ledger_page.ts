// GET /token/ledger, pure: one page of the wallet's credit movements, newest first, with the
// cursor of the next page (null on the last).
import type { CallDecision } from "../ledger/command.ts";
import type { CreditMovement, MovementsPage } from "../../projections/credit_movements.ts";
import { answer, jsonReply, type Reply } from "../calls/reply.ts";

export const DEFAULT_LEDGER_LIMIT = 50;

export interface LedgerEntry {
  at: string;
  type: CreditMovement["type"];
  amount: number;
  balance: number;
  ref: string;
  endpoint: string | null;
}

/**
 * The first `limit` movements. A page that looked at fewer versions than the wallet has goes on
 * below the last one it looked at, even when it holds fewer than `limit` entries.
 */
export function ledgerPage(page: MovementsPage | undefined, limit: number): CallDecision<Reply> {
  const movements = page?.movements ?? [];
  const shown = movements.slice(0, limit);
  const nextCursor = movements.length > limit
    ? String(shown[shown.length - 1].version)
    : page && page.lowestScanned > 1
    ? String(page.lowestScanned)
    : null;
  const entries: LedgerEntry[] = shown.map((m) => ({
    at: m.at.toISOString(),
    type: m.type,
    amount: m.amount,
    balance: m.balance,
    ref: m.ref,
    endpoint: m.endpoint,
  }));
  return answer(jsonReply(200, { entries, nextCursor }));
}
