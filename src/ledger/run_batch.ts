// One batch of billed commands inside one open transaction: the wallets are locked and every
// declared read is loaded in one round trip; then, in arrival order, each command passes its
// caller's gate, is answered from an Idempotency-Key it repeats, refused when its wallet cannot pay,
// held to its wallet's allowance of free calls, or decided; its debit becomes CallBilled, the debit
// rules add theirs, and everything is staged for one flush at the end. A command whose decision
// throws, or whose events or effects Postgres could not store, fails alone: nothing of it is staged
// and the batch's other calls commit in the same transaction.
import type { Tx } from "../db/connect.ts";
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import { freeCallWait, lockWallets, type WalletRow } from "../../projections/wallets.ts";
import { idempotentReplyRead, type IdempotentReplyRow } from "../../projections/idempotent_replies.ts";
import type {
  BilledCommand,
  CallDecision,
  DebitRule,
  DecideState,
  Decision,
  Effect,
  LedgerResult,
} from "./command.ts";
import { BatchReads, type Read, read, type ReadSet } from "./reads.ts";
import { type EffectAppliers, PendingWrites } from "./pending_writes.ts";
import { findUnstorable, isStorable } from "../storable_text.ts";
import { loggedCallError, loggedCallPath } from "./call_bounds.ts";
import type { EventSealer } from "../secrets/sealer.ts";

export interface BatchSetup {
  effects: EffectAppliers;
  rules: DebitRule[];
  /** A fresh call id for each CallBilled. */
  newCallId(): string;
  /** Check each event against its schema as it is staged (tests; off on the hot path). */
  validateEvents: boolean;
  /** Encrypts the events' sensitive fields as they are appended (none: in clear). */
  sealer?: EventSealer;
}

// deno-lint-ignore no-explicit-any
export type AnyBilledCommand = BilledCommand<any, any>;

/** The reply kept for a command's Idempotency-Key, read with the batch's other reads. */
type PriorRead = { prior: Read<IdempotentReplyRow> };

/** A command that failed alone: its caller gets the error, nothing of it was staged. */
export interface CommandFault {
  kind: "fault";
  error: unknown;
}

/** Thrown for a command whose events or effects hold a string Postgres cannot store. */
export class UnstorableCommandError extends Error {
  constructor(where: string) {
    super(`A command staged a string Postgres cannot store, at ${where}`);
    this.name = "UnstorableCommandError";
  }
}

interface Context {
  tx: Tx;
  now: Date;
  setup: BatchSetup;
  wallets: Map<string, WalletRow>;
  reads: BatchReads;
  writes: PendingWrites;
}

/** Runs the commands in arrival order and stages their writes; the caller flushes and commits. */
export async function runBilledBatch(
  tx: Tx,
  { commands, now, setup }: { commands: AnyBilledCommand[]; now: Date; setup: BatchSetup },
): Promise<{ results: (LedgerResult<unknown> | CommandFault)[]; writes: PendingWrites; dbMs: number }> {
  const priors = commands.map((c): PriorRead | undefined =>
    c.idempotency
      ? {
        prior: read(idempotentReplyRead, {
          walletId: c.walletId,
          keyId: c.call.keyId,
          key: c.idempotency.key,
        }),
      }
      : undefined
  );
  const reads = new BatchReads([...commands.map((c) => c.reads), ...priors]);
  // Sent together: the locks and every read cost one round trip.
  const sent = performance.now();
  const [wallets] = await Promise.all([
    lockWallets(tx, commands.map((c) => c.walletId)),
    reads.load(tx, now),
  ]);
  let dbMs = performance.now() - sent;
  const context: Context = {
    tx,
    now,
    setup,
    wallets,
    reads,
    writes: new PendingWrites(setup.effects, reads, { validate: setup.validateEvents, sealer: setup.sealer }),
  };
  const results: (LedgerResult<unknown> | CommandFault)[] = [];
  for (const [i, command] of commands.entries()) {
    try {
      results.push(runOne(context, command, priors[i]));
    } catch (error) {
      results.push({ kind: "fault", error });
    }
  }
  const flushed = performance.now();
  await context.writes.flush(tx, now);
  dbMs += performance.now() - flushed;
  return { results, writes: context.writes, dbMs };
}

function runOne(
  context: Context,
  command: AnyBilledCommand,
  prior: PriorRead | undefined,
): LedgerResult<unknown> {
  const { now, reads } = context;
  const wallet = context.wallets.get(command.walletId);
  if (!wallet || wallet.deactivated_at) return { kind: "unauthorized" };

  const key = command.idempotency;
  const kept = prior ? reads.valuesOf(prior).prior : undefined;
  const state = { wallet, reads: reads.valuesOf(command.reads), now };
  const choice = chooseDecision(command, state, keptState(key?.fingerprint, kept));
  if (choice.replay) {
    const outcome = key!.replay({ status: kept!.status, contentType: kept!.content_type, body: kept!.body });
    return { kind: "answered", outcome, cost: kept!.cost, balance: kept!.balance, replayed: true };
  }
  const { decision, unpaid } = choice;
  const unanswered = { kind: "answered", cost: 0, balance: wallet.balance, replayed: false } as const;
  if (!decision.log) return { ...unanswered, outcome: decision.outcome };
  const charge = decision.charge ?? (unpaid ? 0 : command.price);
  if (!Number.isInteger(charge) || charge < 0 || charge > wallet.balance || (unpaid && charge !== 0)) {
    throw new RangeError(`Charge ${charge} is not payable from balance ${wallet.balance}`);
  }
  // A call that pays nothing writes an event for nothing: only so many a minute and a day.
  if (charge === 0 && command.throttled) {
    const wait = freeCallWait(wallet, now, command.call.endpoint);
    if (wait > 0) return { ...unanswered, outcome: command.throttled(wait, decision.outcome) };
  }
  const balance = wallet.balance - charge;
  stageCall(context, command, wallet, { ...decision, charge }, choice.keep);
  return { kind: "answered", outcome: decision.outcome, cost: charge, balance, replayed: false };
}

/** Whether the caller's Idempotency-Key keeps an answer, and of this request or of another. */
export type KeptState = "none" | "same" | "other";

function keptState(fingerprint: string | undefined, kept: IdempotentReplyRow | undefined): KeptState {
  if (fingerprint === undefined || kept === undefined) return "none";
  return kept.fingerprint === fingerprint ? "same" : "other";
}

/** What the ledger does with a command: replay the kept answer, or the decision that stands. */
export type Choice<O> =
  | { replay: true }
  | { replay?: false; decision: Decision<O>; unpaid: boolean; keep: boolean };

/**
 * Which decision a command gets, in this order: the caller's gate refuses a caller that may not
 * call at all (a key revoked or expired: no call); a kept answer of the same request is replayed;
 * `unpaid` when the balance is below the price; the gate refuses a price past the caller's spend
 * cap (402, free) and a call the caller may not make (403, charged); `mismatch` when the key was
 * used for another request (charged, and the kept answer stays as it was); else `decide`, whose
 * charge the gate checks against the cap once more. `keep`: the answer may be kept for the key.
 * Pure: the ledger and the command specifications both call it.
 */
export function chooseDecision<O, R extends ReadSet>(
  command: BilledCommand<O, R>,
  state: DecideState<R>,
  kept: KeptState,
): Choice<O> {
  const gate = command.gate;
  const stands = (decision: Decision<O>, keep = true) => ({ decision, unpaid: false, keep });
  const gone = gate?.unauthorized(state);
  if (gone) return stands(gone, false);
  if (kept === "same" && command.idempotency) return { replay: true };
  if (state.wallet.balance < command.price) {
    return { decision: command.unpaid(state), unpaid: true, keep: false };
  }
  const capped = gate?.overSpend(state, command.price);
  if (capped) return stands(capped);
  const forbidden = gate?.forbidden(state);
  if (forbidden) return stands(forbidden);
  if (kept === "other" && command.idempotency) return stands(command.idempotency.mismatch(), false);
  const decision = command.decide(state);
  const over = decision.log ? gate?.overSpend(state, decision.charge ?? command.price) : undefined;
  return stands(over ?? decision);
}

/**
 * Stages the call's CallBilled, its events and effects, and what the debit rules add; or, when one
 * of them holds a string Postgres cannot store, throws before anything is staged.
 */
function stageCall(
  context: Context,
  command: AnyBilledCommand,
  wallet: WalletRow,
  decision: CallDecision<unknown> & { charge: number },
  keep: boolean,
): void {
  const { now, setup, writes } = context;
  const { charge, log } = decision;
  const balance = wallet.balance - charge;
  const key = command.idempotency;
  const kept = key && keep ? key.keep(decision.outcome, log) : undefined;
  const events: NewEvent[] = [
    newEvent("CallBilled", {
      callId: setup.newCallId(),
      method: command.call.method,
      path: loggedCallPath(command.call.path),
      endpoint: command.call.endpoint,
      status: log.status,
      ...(log.error ? { error: loggedCallError(log.error) } : {}),
      cost: charge,
      balance,
      ms: Math.max(0, Math.round(performance.now() - command.call.startedAt)),
      ...(kept ? { idempotency: { key: key!.key, fingerprint: key!.fingerprint, ...kept } } : {}),
      ...(command.call.keyId ? { keyId: command.call.keyId } : {}),
    }),
    ...(decision.events ?? []),
  ];
  const effects: Effect[] = [...(decision.effects ?? [])];
  for (const rule of setup.rules) {
    const added = rule.afterDebit(wallet, { charge, balance, now });
    events.push(...(added?.events ?? []));
    effects.push(...(added?.effects ?? []));
  }
  // One unstorable string would fail the whole batch's insert: this command fails alone instead.
  // CallBilled's own texts are bounded and made storable above; a kept answer is the command's.
  if (kept && !isStorable(kept.body)) throw new UnstorableCommandError("CallBilled idempotency.body");
  for (let i = 1; i < events.length; i++) {
    const where = findUnstorable(events[i].data);
    if (where !== undefined) throw new UnstorableCommandError(`${events[i].type} (event ${i + 1}) ${where}`);
  }
  for (const effect of effects) {
    const where = findUnstorable(effect);
    if (where !== undefined) throw new UnstorableCommandError(`effect ${effect.type} ${where}`);
  }
  writes.checkEffects(effects);
  const next = writes.stage(wallet.wallet_id, wallet, events, now);
  context.wallets.set(wallet.wallet_id, next!);
  writes.addEffects(effects);
}
