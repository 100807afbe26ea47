// One batch of billed commands inside one open transaction: the wallets are locked and every
// declared read is loaded in one round trip; then, in arrival order, each command is answered from
// an Idempotency-Key it repeats, refused when its wallet cannot pay, or decided; its debit becomes
// CallBilled, the debit rules add theirs, and everything is staged for one flush at the end.
import type { Tx } from "../db/connect.ts";
import { newEvent } from "../../events/catalogue.ts";
import { lockWallets, type WalletRow } from "../../projections/wallets.ts";
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

export interface BatchSetup {
  effects: EffectAppliers;
  rules: DebitRule[];
  /** A fresh call id for each CallBilled. */
  newCallId(): string;
  /** Check each event against its schema as it is staged (tests; off on the hot path). */
  validateEvents: boolean;
}

// deno-lint-ignore no-explicit-any
export type AnyBilledCommand = BilledCommand<any, any>;

/** The reply kept for a command's Idempotency-Key, read with the batch's other reads. */
type PriorRead = { prior: Read<IdempotentReplyRow> };

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
  commands: AnyBilledCommand[],
  now: Date,
  setup: BatchSetup,
): Promise<{ results: LedgerResult<unknown>[]; writes: PendingWrites }> {
  const priors = commands.map((c): PriorRead | undefined =>
    c.idempotency
      ? { prior: read(idempotentReplyRead, { walletId: c.walletId, key: c.idempotency.key }) }
      : undefined
  );
  const reads = new BatchReads([...commands.map((c) => c.reads), ...priors]);
  // Sent together: the locks and every read cost one round trip.
  const [wallets] = await Promise.all([
    lockWallets(tx, commands.map((c) => c.walletId)),
    reads.load(tx, now),
  ]);
  const context: Context = {
    tx,
    now,
    setup,
    wallets,
    reads,
    writes: new PendingWrites(setup.effects, reads, { validate: setup.validateEvents }),
  };
  const results: LedgerResult<unknown>[] = [];
  for (const [i, command] of commands.entries()) results.push(runOne(context, command, priors[i]));
  await context.writes.flush(tx, now);
  return { results, writes: context.writes };
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
  if (key && kept && kept.fingerprint === key.fingerprint) {
    const outcome = key.replay({ status: kept.status, contentType: kept.content_type, body: kept.body });
    return { kind: "answered", outcome, cost: kept.cost, balance: kept.balance, replayed: true };
  }
  const state = { wallet, reads: reads.valuesOf(command.reads), now };
  const { decision, unpaid } = chooseDecision(command, state, kept !== undefined);
  if (!decision.log) {
    return { kind: "answered", outcome: decision.outcome, cost: 0, balance: wallet.balance, replayed: false };
  }
  const charge = decision.charge ?? (unpaid ? 0 : command.price);
  if (!Number.isInteger(charge) || charge < 0 || charge > wallet.balance || (unpaid && charge !== 0)) {
    throw new RangeError(`Charge ${charge} is not payable from balance ${wallet.balance}`);
  }
  const balance = wallet.balance - charge;
  stageCall(context, command, wallet, { ...decision, charge }, unpaid);
  return { kind: "answered", outcome: decision.outcome, cost: charge, balance, replayed: false };
}

/**
 * Which decision a command gets, once a repeated Idempotency-Key was answered: `unpaid` when the
 * balance is below the price, `mismatch` when its key was used for another request, else `decide`.
 * Pure: the ledger and the command specifications both call it.
 */
export function chooseDecision<O, R extends ReadSet>(
  command: BilledCommand<O, R>,
  state: DecideState<R>,
  keyUsedElsewhere: boolean,
): { decision: Decision<O>; unpaid: boolean } {
  if (state.wallet.balance < command.price) return { decision: command.unpaid(state), unpaid: true };
  if (keyUsedElsewhere && command.idempotency) {
    return { decision: command.idempotency.mismatch(), unpaid: false };
  }
  return { decision: command.decide(state), unpaid: false };
}

/** Stages the call's CallBilled, its events and effects, and what the debit rules add. */
function stageCall(
  context: Context,
  command: AnyBilledCommand,
  wallet: WalletRow,
  decision: CallDecision<unknown> & { charge: number },
  unpaid: boolean,
): void {
  const { now, setup, writes } = context;
  const { charge, log } = decision;
  const balance = wallet.balance - charge;
  const key = command.idempotency;
  const kept = key && !unpaid ? key.keep(decision.outcome, log) : undefined;
  const events = [
    newEvent("CallBilled", {
      callId: setup.newCallId(),
      method: command.call.method,
      path: command.call.path,
      endpoint: command.call.endpoint,
      status: log.status,
      ...(log.error ? { error: log.error } : {}),
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
  const next = writes.stage(wallet.wallet_id, wallet, events, now);
  context.wallets.set(wallet.wallet_id, next!);
  writes.addEffects(effects);
}
