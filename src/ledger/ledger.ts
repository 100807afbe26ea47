// The ledger runs every billed call as one transaction: lock the wallet, decide, debit, append
// the events, update the inline projections, commit; only then is the caller answered.
import type { Sql, Tx } from "../db/connect.ts";
import { appendEvents } from "../../events/store.ts";
import { type NewEvent, newEvent, type StoredEvent } from "../../events/catalogue.ts";
import { applyInline } from "../../projections/projection.ts";
import { INLINE_PROJECTIONS } from "../../projections/mod.ts";
import { evolveWallet, lockWallet, type WalletRow, walletsProjection } from "../../projections/wallets.ts";
import { findIdempotentReply } from "../../projections/idempotent_replies.ts";
import {
  type BilledCommand,
  type Decision,
  failure,
  INSUFFICIENT_CREDITS,
  type LedgerResult,
} from "./command.ts";
import type { Clock } from "../clock.ts";
import { randomId } from "../ids.ts";

export interface Ledger {
  run(command: BilledCommand): Promise<LedgerResult>;
  /** Appends events to a wallet outside a billed call (wallet opening, payments, sweeps). */
  append(
    walletId: string,
    decide: (tx: Tx, wallet: WalletRow | undefined, now: Date) => Promise<NewEvent[]> | NewEvent[],
  ): Promise<StoredEvent[]>;
}

export function createLedger(sql: Sql, clock: Clock): Ledger {
  return {
    run: (command) => sql.begin((tx) => runCommand(tx, command, clock.now())),
    append: (walletId, decide) =>
      sql.begin(async (tx) => {
        const now = clock.now();
        const wallet = await lockWallet(tx, walletId);
        const events = await decide(tx, wallet, now);
        return await commitEvents(tx, walletId, wallet, events, now);
      }),
  };
}

/** One command inside an open transaction; exported so a batching ledger can reuse it. */
export async function runCommand(tx: Tx, command: BilledCommand, now: Date): Promise<LedgerResult> {
  const wallet = await lockWallet(tx, command.walletId);
  if (!wallet || wallet.deactivated_at) return { kind: "unauthorized" };

  let decision: Decision;
  const key = command.idempotency;
  const prior = key ? await findIdempotentReply(tx, wallet.wallet_id, key.key, now) : undefined;
  if (prior && prior.fingerprint === key!.fingerprint) {
    const reply = { status: prior.status, contentType: prior.content_type, body: prior.body };
    return { kind: "answered", reply, cost: prior.cost, balance: prior.balance, replayed: true };
  }
  if (wallet.balance < command.cost) {
    decision = { ...failure(402, INSUFFICIENT_CREDITS), charge: 0 };
  } else if (prior) {
    decision = failure(422, `Idempotency-Key "${key!.key}" was already used for a different request`);
  } else {
    decision = await command.decide(tx, wallet, now);
  }

  const charge = decision.charge ?? command.cost;
  if (!Number.isInteger(charge) || charge < 0 || charge > wallet.balance) {
    throw new RangeError(`Charge ${charge} is not payable from balance ${wallet.balance}`);
  }
  const balance = wallet.balance - charge;
  const { reply } = decision;
  const remembered = key && reply.status !== 402
    ? { key: key.key, fingerprint: key.fingerprint, ...reply }
    : undefined;
  const billed = newEvent("CallBilled", {
    callId: randomId(20),
    method: command.call.method,
    path: command.call.path,
    endpoint: command.call.endpoint,
    status: reply.status,
    ...(decision.error ? { error: decision.error } : {}),
    cost: charge,
    balance,
    ms: Math.max(0, Math.round(performance.now() - command.call.startedAt)),
    ...(remembered ? { idempotency: remembered } : {}),
  });
  await commitEvents(tx, wallet.wallet_id, wallet, [billed, ...(decision.events ?? [])], now);
  return { kind: "answered", reply, cost: charge, balance, replayed: false };
}

/** Appends events after the wallet's version and folds them into every inline projection. */
export async function commitEvents(
  tx: Tx,
  walletId: string,
  wallet: WalletRow | undefined,
  events: NewEvent[],
  now: Date,
): Promise<StoredEvent[]> {
  const stored = await appendEvents(tx, walletId, wallet?.version ?? 0, events, now);
  if (stored.length === 0) return stored;
  const next = stored.reduce<WalletRow | undefined>(evolveWallet, wallet);
  await walletsProjection.save(tx, stored[stored.length - 1], next);
  for (const event of stored) {
    for (const projection of INLINE_PROJECTIONS) await applyInline(tx, projection, event);
  }
  return stored;
}
