// Opens a wallet for a new token: 100 welcome credits, at most one token per client address
// every 10 seconds. The limit lives in Postgres so it holds across instances.
import type { Sql } from "../db/connect.ts";
import type { Clock } from "../clock.ts";
import { newEvent } from "../../events/catalogue.ts";
import { commitEvents } from "./ledger.ts";
import { newToken, sha256Hex } from "../ids.ts";
import { inTransaction } from "../db/transaction.ts";

export const WELCOME_CREDITS = 100;
export const TOKEN_INTERVAL_MS = 10_000;

export type OpenWalletResult = { ok: true; token: string; walletId: string } | {
  ok: false;
  retryAfterSeconds: number;
};

export async function openWallet(sql: Sql, clock: Clock, clientIp: string): Promise<OpenWalletResult> {
  const token = newToken();
  const walletId = await sha256Hex(token);
  return await inTransaction(sql, async (tx): Promise<OpenWalletResult> => {
    const now = clock.now();
    const since = new Date(now.getTime() - TOKEN_INTERVAL_MS);
    // The row lock of the conflicting insert serializes racing requests from one address.
    const claimed = await tx`
      insert into token_requests (client_ip, last_at) values (${clientIp}, ${now})
      on conflict (client_ip) do update set last_at = excluded.last_at
      where token_requests.last_at <= ${since}
      returning 1`;
    if (claimed.length === 0) {
      const [row] = await tx<
        { last_at: Date }[]
      >`select last_at from token_requests where client_ip = ${clientIp}`;
      const waitMs = row.last_at.getTime() + TOKEN_INTERVAL_MS - now.getTime();
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    await commitEvents(tx, walletId, undefined, [
      newEvent("WalletOpened", {}),
      newEvent("CreditsGranted", { amount: WELCOME_CREDITS, balance: WELCOME_CREDITS, reason: "welcome" }),
    ], now);
    return { ok: true, token, walletId };
  });
}
