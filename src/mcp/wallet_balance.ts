// wallet_balance: the wallet's balance (and a scoped key's own spend), free and not logged, like
// reading X-Balance. Not free to the service, so limited per wallet like the free REST views, and
// answered by the ledger in a batch (a decision that is no call: it reads the wallet and the key
// under the batch's lock and writes nothing) rather than by a query of its own.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { BilledCommand, DecideState, NoCall } from "../ledger/command.ts";
import { read, type ReadSet } from "../ledger/reads.ts";
import { scopedKeyRead, type ScopedKeyRow } from "../../projections/scoped_keys.ts";
import type { WalletRow } from "../../projections/wallets.ts";
import { keyUnauthorized } from "../calls/key_gate.ts";
import type { Caller } from "../calls/billed_call.ts";
import { activeWallets, knownKeys } from "../calls/wallet_cache.ts";
import { KeyedRateLimit, retryAfterSeconds } from "../calls/rate_limit.ts";
import { VIEW_CALLS_PER_MINUTE, VIEW_WINDOW_MS } from "../wallets/view_limit.ts";
import { TOO_MANY_REQUESTS, UNAUTHORIZED } from "../calls/reply.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { toolError } from "./tool_result.ts";

/** Most wallets whose calls are remembered; past it, new wallets share one budget while all are busy. */
const WALLETS_KEPT = 50_000;

/**
 * Per wallet, VIEW_CALLS_PER_MINUTE a minute as for the free REST views, kept in this process:
 * the tool writes nothing, so a limit in Postgres would cost a write per call, more than the batched
 * read it guards. Each instance allows its own share; the load stays bounded by instances × limit.
 */
export const balanceCalls = new KeyedRateLimit({
  perWindow: VIEW_CALLS_PER_MINUTE,
  windowMs: VIEW_WINDOW_MS,
  maxKeys: WALLETS_KEPT,
});

export const BalanceOutput = {
  balance: z.number().int().describe("The wallet's balance"),
  cost: z.literal(0),
  key: z.object({
    id: z.string(),
    scope: z.enum(["read", "write"]),
    spent: z.number().int().describe("Credits this key's calls were charged so far"),
    spendCap: z.number().int().optional(),
  }).optional().describe("The scoped key the call was made with"),
};

type BalanceAnswer = z.infer<z.ZodObject<typeof BalanceOutput>>;

/** What the tool answers: the balance and the key's spend, or why the key may not see them. */
export type BalanceOutcome = { ok: true; answer: BalanceAnswer } | { ok: false; refusal: string };

/** The pure decision, from the wallet and the caller's key as the batch's lock holds them. */
export function walletBalanceOutcome(
  wallet: WalletRow,
  key: ScopedKeyRow | undefined,
  options: { withKey: boolean; now: Date },
): BalanceOutcome {
  if (!options.withKey) return { ok: true, answer: { balance: wallet.balance, cost: 0 } };
  const refused = keyUnauthorized(key, options.now);
  if (refused || !key) return { ok: false, refusal: refused?.outcome.body ?? UNAUTHORIZED };
  const spendCap = key.spend_cap !== null ? { spendCap: key.spend_cap } : {};
  return {
    ok: true,
    answer: {
      balance: wallet.balance,
      cost: 0,
      key: { id: key.key_id, scope: key.scope, spent: key.spent, ...spendCap },
    },
  };
}

/** The ledger command: no price, no call (nothing charged, logged or written), the key among its reads. */
export function walletBalanceCommand(caller: Caller, startedAt: number): BilledCommand<BalanceOutcome> {
  const reads: ReadSet = caller.key
    ? { scopedKey: read(scopedKeyRead, { walletId: caller.walletId, keyId: caller.key.keyId }) }
    : {};
  const answer = ({ wallet, reads, now }: DecideState<ReadSet>): NoCall<BalanceOutcome> => ({
    outcome: walletBalanceOutcome(wallet, reads.scopedKey as ScopedKeyRow | undefined, {
      withKey: caller.key !== undefined,
      now,
    }),
  });
  return {
    walletId: caller.walletId,
    price: 0,
    call: { method: "MCP", path: "wallet_balance", endpoint: "token", startedAt },
    reads,
    decide: answer,
    unpaid: answer,
  };
}

/** The tool's answer: Too Many Requests past the wallet's limit, else the ledger's. */
export async function walletBalance(ledger: Ledger, caller: Caller): Promise<CallToolResult> {
  const waitMs = balanceCalls.take(caller.walletId);
  if (waitMs > 0) return toolError(`${TOO_MANY_REQUESTS}: retry after ${retryAfterSeconds(waitMs)} s`);
  const result = await ledger.runBilled(walletBalanceCommand(caller, performance.now()));
  if (result.kind === "unauthorized") {
    activeWallets.evict(caller.walletId);
    return toolError(UNAUTHORIZED);
  }
  if (!result.outcome.ok) {
    if (caller.key) knownKeys.evict(caller.key.hash);
    return toolError(result.outcome.refusal);
  }
  const structured = result.outcome.answer;
  return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured };
}
