// Opens a wallet for a new token: 100 welcome credits, at most one token per client every 10
// seconds, a client being an IPv4 address or an IPv6 network (src/http/client_network.ts). The
// limit lives in Postgres so it holds across instances.
import type { Ledger } from "../ledger/ledger.ts";
import type { UnbilledCommand } from "../ledger/command.ts";
import { newEvent } from "../../events/catalogue.ts";
import { read } from "../ledger/reads.ts";
import { newToken, sha256Hex } from "../ids.ts";
import { lastTokenRequestRead, type RecordTokenRequest, TOKEN_INTERVAL_MS } from "./token_requests.ts";
import { activeWallets } from "../calls/wallet_cache.ts";

export const WELCOME_CREDITS = 100;
export { TOKEN_INTERVAL_MS };

export type OpenWalletResult = { ok: true; token: string; walletId: string } | {
  ok: false;
  retryAfterSeconds: number;
};

/** The pure decision: a wallet with its welcome credits, unless the client asked too recently. */
export function openWalletCommand(walletId: string, token: string, client: string) {
  const reads = { last: read(lastTokenRequestRead, client) };
  const command: UnbilledCommand<OpenWalletResult, typeof reads> = {
    walletId,
    reads,
    decide({ reads, now }) {
      const waitMs = (reads.last?.getTime() ?? 0) + TOKEN_INTERVAL_MS - now.getTime();
      if (waitMs > 0) {
        return { outcome: { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) } };
      }
      const recorded: RecordTokenRequest = { type: "recordTokenRequest", clientIp: client };
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

/**
 * Opens a wallet for `client` (its network). The edge remembers the new wallet as active: it exists
 * once committed, and its first call then needs no lookup of its own (nor any of the budget for
 * lookups that the client's address may have spent on unknown tokens).
 */
export async function openWallet(ledger: Ledger, client: string): Promise<OpenWalletResult> {
  const token = newToken();
  const opened = await ledger.appendUnbilled(openWalletCommand(await sha256Hex(token), token, client));
  if (opened.ok) activeWallets.remember(opened.walletId);
  return opened;
}
