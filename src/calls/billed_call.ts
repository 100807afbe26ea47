// One billed call, whatever brings it (a REST route, an MCP tool, a decision spec), and the ledger
// command it makes: the wallet pays the price, a scoped key's call goes through the key's gate, and
// the caches of the edge forget a wallet or key the ledger found gone.
import type { BilledCommand, CallMeta, DecideState, Decision, Idempotency } from "../ledger/command.ts";
import { INSUFFICIENT_CREDITS, type LedgerResult } from "../ledger/command.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { ReadSet } from "../ledger/reads.ts";
import { commandOfKey, isKeyRefusal, type KeyAccess } from "./key_gate.ts";
import { failure, type Reply, textReply, TOO_MANY_REQUESTS } from "./reply.ts";
import { activeWallets, knownKeys } from "./wallet_cache.ts";

/** Who makes a call: a wallet, through its token or through one of its scoped keys. */
export interface Caller {
  walletId: string;
  key?: { keyId: string; hash: string };
}

/**
 * One billed call, whatever brings it (a REST route, an MCP tool, a decision spec), as its feature's
 * builder makes it (kv/calls.ts): what it costs, what it needs of a scoped key, what it reads under
 * the wallet's lock and its pure decision.
 */
export interface BilledCall<R extends ReadSet = ReadSet> {
  /** Credits it costs; absent: its route's price in the billing table (prices.ts). */
  price?: number;
  /**
   * What it needs of a scoped key; absent: keys may not make it (403). REST reads the same rule from
   * the request instead (its route's entry in prices.ts), so a refused request is judged alike.
   */
  access?: KeyAccess;
  reads?: R;
  decide(state: DecideState<R>): Decision<Reply>;
}

/** Types a billed call from its own reads (the state its decision sees). */
export function billedCall<R extends ReadSet>(call: BilledCall<R>): BilledCall<R> {
  return call;
}

/** A billed call as made: its price settled, what its call log shows, and the client's Idempotency-Key. */
export interface CallSpec<R extends ReadSet> extends BilledCall<R> {
  price: number;
  call: Omit<CallMeta, "keyId">;
  idempotency?: Idempotency<Reply>;
}

const refuseUnpaid = () => failure(402, INSUFFICIENT_CREDITS);

/** Past the wallet's allowance of free calls: 429, and nothing is written. */
function tooManyFreeCalls(waitSeconds: number): Reply {
  return { ...textReply(429, TOO_MANY_REQUESTS), headers: { "retry-after": String(waitSeconds) } };
}

export function billedCommand<R extends ReadSet>(
  caller: Caller,
  spec: CallSpec<R>,
): BilledCommand<Reply, ReadSet> {
  const command: BilledCommand<Reply, R> = {
    walletId: caller.walletId,
    price: spec.price,
    call: spec.call,
    idempotency: spec.idempotency,
    reads: spec.reads,
    decide: spec.decide,
    unpaid: refuseUnpaid,
    throttled: tooManyFreeCalls,
    byClient: true,
  };
  if (!caller.key) return command as unknown as BilledCommand<Reply, ReadSet>;
  return commandOfKey(command, { keyId: caller.key.keyId, access: spec.access }) as unknown as BilledCommand<
    Reply,
    ReadSet
  >;
}

/**
 * Runs the call through the ledger. `unauthorized`: the wallet is gone; a reply that isKeyRefusal:
 * the key is revoked or expired. Either way nothing was charged or logged.
 */
export async function runBilledCall<R extends ReadSet>(
  ledger: Ledger,
  caller: Caller,
  spec: CallSpec<R>,
): Promise<LedgerResult<Reply>> {
  const result = await ledger.runBilled(billedCommand(caller, spec));
  if (result.kind === "unauthorized") activeWallets.evict(caller.walletId);
  if (caller.key && (result.kind === "unauthorized" || isKeyRefusal(result.outcome))) {
    knownKeys.evict(caller.key.hash);
  }
  return result;
}
