// The wallet's own billed calls (spec 4.2, CONTRACT sections 2-4), pure: the balance, the recharge
// link and the newest call-log entries, each from the locked wallet and the declared reads.
import type { CallDecision } from "../ledger/command.ts";
import type { WalletRow } from "../../projections/wallets.ts";
import type { CallLogRow } from "../../projections/call_logs.ts";
import { answer, jsonReply, type Reply, textReply } from "../calls/reply.ts";

/** GET /token: the balance after this call, creation time and hash. */
export function walletInfo(wallet: WalletRow, price: number): CallDecision<Reply> {
  return answer(jsonReply(200, {
    wallet: wallet.balance - price,
    created: wallet.created_at.toISOString(),
    hash: wallet.wallet_id,
  }));
}

/** GET /recharge: the tier's payment link with the token as client_reference_id. */
export function rechargeLink(link: string, token: string): CallDecision<Reply> {
  const url = new URL(link);
  url.searchParams.set("client_reference_id", token);
  return answer(textReply(200, url.toString()));
}

/** GET /token/logs: one credit per entry returned, never more entries than the balance pays for. */
export function callLogPage(wallet: WalletRow, newest: CallLogRow[]): CallDecision<Reply> {
  const entries = newest.slice(0, wallet.balance).map((r) => ({
    id: r.id,
    method: r.method,
    path: r.path,
    endpoint: r.endpoint,
    status_code: r.status_code,
    response_time_ms: r.response_time_ms,
    ...(r.error ? { error: r.error } : {}),
    timestamp: r.at.toISOString(),
    expiration: r.expires_at.toISOString(),
    cost: r.cost,
    balance: r.balance,
    ...(r.key_id ? { keyId: r.key_id } : {}),
  }));
  return answer(jsonReply(200, { logs: entries, n: entries.length }), { charge: entries.length });
}
