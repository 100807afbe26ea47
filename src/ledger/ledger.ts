// The ledger runs every billed call in a transaction that locks the wallet, decides, debits,
// appends the events and updates the inline projections; only after the commit is the caller
// answered. Calls that arrive while a transaction is in flight wait and go together into the
// next one (group commit): one commit, one event insert and one wallet update for many calls,
// each call keeping its own outcome.
import type { Sql, Tx } from "../db/connect.ts";
import { appendStaged, stageEvents } from "../../events/store.ts";
import { type NewEvent, newEvent, type StoredEvent } from "../../events/catalogue.ts";
import { applyInline, type Projection } from "../../projections/projection.ts";
import { INLINE_PROJECTIONS } from "../../projections/mod.ts";
import {
  evolveWallet,
  lockWallet,
  lockWallets,
  saveWallets,
  type WalletRow,
} from "../../projections/wallets.ts";
import { findIdempotentReply } from "../../projections/idempotent_replies.ts";
import { kvEntryKey, readKv, readKvMany } from "../../projections/kv.ts";
import {
  type BatchReads,
  type BilledCommand,
  type Decision,
  failure,
  INSUFFICIENT_CREDITS,
  type LedgerResult,
} from "./command.ts";
import type { Clock } from "../clock.ts";
import { randomId } from "../ids.ts";
import { raiseLowBalanceAlert, startsLowBalanceEpisode } from "../wallets/low_balance.ts";
import { inTransaction } from "../db/transaction.ts";
import { DatabaseUnavailableError } from "../db/faults.ts";
import { expireAfter, removeFrom, withDeadline } from "../db/deadline.ts";

export interface Ledger {
  run(command: BilledCommand): Promise<LedgerResult>;
  /** Appends events to a wallet outside a billed call (payments, sweeps, deliveries). */
  append(
    walletId: string,
    decide: (tx: Tx, wallet: WalletRow | undefined, now: Date) => Promise<NewEvent[]> | NewEvent[],
  ): Promise<StoredEvent[]>;
}

export interface LedgerOptions {
  /** Most calls in one transaction. */
  maxBatch?: number;
  /** Most transactions in flight at once (each holds a connection). */
  maxInFlight?: number;
  /** Most calls waiting; past it a call fails at once rather than queueing without bound. */
  maxQueue?: number;
  /** Told the size of every batch that commits (observability, tests). */
  onBatch?: (size: number) => void;
  /** Longest a call waits for its answer before a DatabaseUnavailableError (0 or unset: no bound). */
  deadlineMs?: number;
}

export const DEFAULT_LEDGER_OPTIONS = { maxBatch: 128, maxInFlight: 2, maxQueue: 10_000 };

export class LedgerBusyError extends Error {
  constructor() {
    super("The ledger queue is full");
    this.name = "LedgerBusyError";
  }
}

interface Waiting {
  command: BilledCommand;
  resolve(result: LedgerResult): void;
  reject(error: unknown): void;
}

export function createLedger(sql: Sql, clock: Clock, options: LedgerOptions = {}): Ledger {
  const { maxBatch, maxInFlight, maxQueue, onBatch, deadlineMs = 0 } = {
    ...DEFAULT_LEDGER_OPTIONS,
    ...options,
  };
  const queue: Waiting[] = [];
  let inFlight = 0;

  function pump() {
    while (inFlight < maxInFlight && queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      inFlight++;
      runBatch(sql, clock, batch, onBatch).finally(() => {
        inFlight--;
        pump();
      });
    }
  }

  return {
    run(command) {
      if (queue.length >= maxQueue) return Promise.reject(new LedgerBusyError());
      return new Promise((resolve, reject) => {
        const waiting: Waiting = { command, resolve, reject };
        queue.push(waiting);
        // A call still queued at its deadline leaves the queue unrun; one in a transaction may commit.
        expireAfter(waiting, deadlineMs, () => removeFrom(queue, waiting));
        pump();
      });
    },
    append: (walletId, decide) =>
      withDeadline(
        inTransaction(sql, async (tx) => {
          const now = clock.now();
          const wallet = await lockWallet(tx, walletId);
          const events = await decide(tx, wallet, now);
          return await commitEvents(tx, walletId, wallet, events, now);
        }),
        deadlineMs,
        "unknown",
      ),
  };
}

/**
 * Runs a batch in one transaction. If the transaction fails as a whole by a fault in any command,
 * every command is retried alone, so one bad command cannot fail the others. A database fault is
 * not retried: the database is out, and a batch whose COMMIT was sent may have committed.
 */
async function runBatch(sql: Sql, clock: Clock, batch: Waiting[], onBatch?: (size: number) => void) {
  try {
    const results = await inTransaction(
      sql,
      (tx) => runCommands(tx, batch.map((w) => w.command), clock.now()),
    );
    onBatch?.(batch.length);
    batch.forEach((waiting, i) => waiting.resolve(results[i]));
  } catch (error) {
    if (batch.length === 1 || error instanceof DatabaseUnavailableError) {
      return batch.forEach((waiting) => waiting.reject(error));
    }
    for (const waiting of batch) {
      try {
        const [result] = await inTransaction(sql, (tx) => runCommands(tx, [waiting.command], clock.now()));
        onBatch?.(1);
        waiting.resolve(result);
      } catch (alone) {
        waiting.reject(alone);
      }
    }
  }
}

/** Runs commands in arrival order inside one open transaction. */
export async function runCommands(tx: Tx, commands: BilledCommand[], now: Date): Promise<LedgerResult[]> {
  const wanted = commands.flatMap((c) => c.prefetch ? [{ walletId: c.walletId, ...c.prefetch.kv }] : []);
  // Sent together: the locks and the prefetched reads cost one round trip.
  const [wallets, kvSnapshot] = await Promise.all([
    lockWallets(tx, commands.map((c) => c.walletId)),
    readKvMany(tx, wanted, now),
  ]);
  const writes = new PendingWrites(kvSnapshot);
  const results: LedgerResult[] = [];
  for (const command of commands) results.push(await runLocked(tx, command, now, wallets, writes));
  await writes.flush(tx);
  return results;
}

async function runLocked(
  tx: Tx,
  command: BilledCommand,
  now: Date,
  wallets: Map<string, WalletRow>,
  writes: PendingWrites,
): Promise<LedgerResult> {
  const wallet = wallets.get(command.walletId);
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
    decision = await command.decide(tx, wallet, now, writes.readsFor(tx, wallet.wallet_id, now));
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
  const events = [billed, ...(decision.events ?? [])];
  if (startsLowBalanceEpisode(wallet, balance, charge)) {
    events.push(await raiseLowBalanceAlert(tx, wallet, balance, now));
  }
  const next = await writes.stage(tx, wallet.wallet_id, wallet, events, now);
  wallets.set(wallet.wallet_id, next!);
  return { kind: "answered", reply, cost: charge, balance, replayed: false };
}

/**
 * What a transaction will write at its end: the events, the wallet rows and the rows of
 * insert-only projections, each in one statement. Projections that commands read (KV, webhooks,
 * idempotent replies) are written at once, so a later command of the same batch sees them.
 */
class PendingWrites {
  readonly events: StoredEvent[] = [];
  readonly wallets = new Map<string, WalletRow>();
  readonly deferred = new Map<Projection<any>, unknown[]>();

  /** KV values as this transaction sees them: prefetched, then kept current by its own writes. */
  constructor(readonly kvSnapshot = new Map<string, string | null>()) {}

  readsFor(tx: Tx, walletId: string, now: Date): BatchReads {
    return {
      kv: async (bucket, key) => {
        const known = this.kvSnapshot.get(kvEntryKey(walletId, bucket, key));
        if (known !== undefined) return known ?? undefined;
        return await readKv(tx, walletId, bucket, key, now);
      },
    };
  }

  async stage(
    tx: Tx,
    walletId: string,
    wallet: WalletRow | undefined,
    events: NewEvent[],
    now: Date,
  ): Promise<WalletRow | undefined> {
    const staged = stageEvents(walletId, wallet?.version ?? 0, events, now);
    const next = staged.reduce<WalletRow | undefined>(evolveWallet, wallet);
    if (next) this.wallets.set(walletId, next);
    this.events.push(...staged);
    for (const event of staged) {
      if (event.type === "KvWritten" || event.type === "KvDeleted") {
        const { bucket, key } = event.data;
        this.kvSnapshot.set(
          kvEntryKey(walletId, bucket, key),
          event.type === "KvWritten" ? event.data.value : null,
        );
      }
      for (const projection of INLINE_PROJECTIONS) {
        if (projection.saveMany && projection.keyOf(event) !== null) {
          const row = projection.evolve(undefined, event);
          if (!row) continue;
          const rows = this.deferred.get(projection);
          if (rows) rows.push(row);
          else this.deferred.set(projection, [row]);
        } else {
          await applyInline(tx, projection, event);
        }
      }
    }
    return next;
  }

  async flush(tx: Tx) {
    // Independent statements: sent together, they cost one round trip.
    await Promise.all([
      appendStaged(tx, this.events),
      saveWallets(tx, [...this.wallets.values()]),
      ...[...this.deferred].map(([projection, rows]) => projection.saveMany!(tx, rows)),
    ]);
  }
}

/** Appends events to one wallet and updates every inline projection, in the caller's transaction. */
export async function commitEvents(
  tx: Tx,
  walletId: string,
  wallet: WalletRow | undefined,
  events: NewEvent[],
  now: Date,
): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  const writes = new PendingWrites();
  await writes.stage(tx, walletId, wallet, events, now);
  await writes.flush(tx);
  return writes.events;
}
