// Opens a wallet for a new token: 100 welcome credits, at most one token per client address
// every 10 seconds. The limit lives in Postgres so it holds across instances.
import type { Ledger } from "../ledger/ledger.ts";
import type { UnbilledCommand } from "../ledger/command.ts";
import { newEvent } from "../../events/catalogue.ts";
import { read } from "../ledger/reads.ts";
import { newToken, sha256Hex } from "../ids.ts";
import { lastTokenRequestRead, type RecordTokenRequest } from "./token_requests.ts";

export const WELCOME_CREDITS = 100;
export const TOKEN_INTERVAL_MS = 10_000;

export type OpenWalletResult = { ok: true; token: string; walletId: string } | {
  ok: false;
  retryAfterSeconds: number;
};

/** The pure decision: a wallet with its welcome credits, unless the address asked too recently. */
export function openWalletCommand(walletId: string, token: string, clientIp: string) {
  const reads = { last: read(lastTokenRequestRead, clientIp) };
  const command: UnbilledCommand<OpenWalletResult, typeof reads> = {
    walletId,
    reads,
    decide({ reads, now }) {
      const waitMs = (reads.last?.getTime() ?? 0) + TOKEN_INTERVAL_MS - now.getTime();
      if (waitMs > 0) {
        return { outcome: { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) } };
      }
      const recorded: RecordTokenRequest = { type: "recordTokenRequest", clientIp };
      return {
        outcome: { ok: true, token, walletId },
        events: [
          newEvent("WalletOpened", {}),
          newEvent("CreditsGranted", {
            amount: WELCOME_CREDITS,
            balance: WELCOME_CREDITS,
            reason: "welcome",
          }),
        ],
        effects: [recorded],
      };
    },
  };
  return command;
}

export async function openWallet(ledger: Ledger, clientIp: string): Promise<OpenWalletResult> {
  const token = newToken();
  return await ledger.appendUnbilled(openWalletCommand(await sha256Hex(token), token, clientIp));
}
