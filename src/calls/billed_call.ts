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
  /** Credits it costs; absent: its route's price in the billing table (prices.ts), as made (CallMade). */
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

/**
 * Where a billed call is made, as its transport knows it: who makes it, what its call log shows and
 * the client's Idempotency-Key (REST only). Not a second description of the call: the call is the
 * feature's BilledCall, unchanged.
 */
export interface CallMade {
  caller: Caller;
  /** The call-log line; the price is the call's own, else this route's. */
  at: Omit<CallMeta, "keyId">;
  /** The route's price, for a call that names none (a refusal at the route's price). */
  routePrice: number;
  idempotency?: Idempotency<Reply>;
}

const refuseUnpaid = () => failure(402, INSUFFICIENT_CREDITS);

/** Past the wallet's allowance of free calls: 429, and nothing is written. */
function tooManyFreeCalls(waitSeconds: number): Reply {
  return { ...textReply(429, TOO_MANY_REQUESTS), headers: { "retry-after": String(waitSeconds) } };
}

/** The ledger command a billed call makes where it is made: the one way REST, MCP and the specs run it. */
export function billedCommand<R extends ReadSet>(
  call: BilledCall<R>,
  made: CallMade,
): BilledCommand<Reply, ReadSet> {
  const { caller } = made;
  const command: BilledCommand<Reply, R> = {
    walletId: caller.walletId,
    price: call.price ?? made.routePrice,
    call: made.at,
    idempotency: made.idempotency,
    reads: call.reads,
    decide: call.decide,
    unpaid: refuseUnpaid,
    throttled: tooManyFreeCalls,
    byClient: true,
  };
  if (!caller.key) return command as unknown as BilledCommand<Reply, ReadSet>;
  return commandOfKey(command, { keyId: caller.key.keyId, access: call.access }) as unknown as BilledCommand<
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
  call: BilledCall<R>,
  made: CallMade,
): Promise<LedgerResult<Reply>> {
  const { caller } = made;
  const result = await ledger.runBilled(billedCommand(call, made));
  if (result.kind === "unauthorized") activeWallets.evict(caller.walletId);
  if (caller.key && (result.kind === "unauthorized" || isKeyRefusal(result.outcome))) {
    knownKeys.evict(caller.key.hash);
  }
  return result;
}
