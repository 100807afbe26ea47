// The ledger's two entry points. `runBilled` queues a billed call: calls that arrive while a
// transaction is in flight wait and go together into the next one (group commit), each keeping its
// own outcome, and none is answered before its commit. `appendUnbilled` appends events that move no
// call through the queue (payments, sweeps, delivery results) in a transaction of its own. The
// ledger names no feature: effects and debit rules are plugged in by the modules that own them. A
// command that faults fails alone, and a wallet whose calls keep faulting is refused for a while.
import { setImmediate } from "node:timers";
import type { Sql } from "../db/connect.ts";
import { lockWallet } from "../../projections/wallets.ts";
import type { BilledCommand, DebitRule, LedgerResult, UnbilledCommand } from "./command.ts";
import type { Clock } from "../clock.ts";
import { randomId } from "../ids.ts";
import { BatchReads, type ReadSet } from "./reads.ts";
import { type EffectAppliers, PendingWrites } from "./pending_writes.ts";
import { type AnyBilledCommand, type BatchSetup, type CommandFault, runBilledBatch } from "./run_batch.ts";
import { CallerThrottledError, FaultThrottle } from "./fault_throttle.ts";
import type { BatchTiming } from "./batch_stats.ts";
import { inTransaction } from "../db/transaction.ts";
import { DatabaseUnavailableError, isDatabaseUnavailable } from "../db/faults.ts";
import { expireAfter, removeFrom, withDeadline } from "../db/deadline.ts";
import type { EventSealer } from "../secrets/sealer.ts";
import { recordBatchRetry, recordLedgerBusy, watchLedger } from "../metrics/ledger_metrics.ts";
import { recordDatabaseAnswered, recordDatabaseUnavailable } from "../metrics/database_metrics.ts";

export interface Ledger {
  /** Queued and batched with concurrent calls; charged and logged; answered after its commit. */
  runBilled<O, R extends ReadSet>(command: BilledCommand<O, R>): Promise<LedgerResult<O>>;
  /** Not queued, not billed: one transaction under the wallet's lock, answered after its commit. */
  appendUnbilled<O, R extends ReadSet>(command: UnbilledCommand<O, R>): Promise<O>;
  /** A call of the wallet faulted outside the ledger (a route's fault): it counts towards the throttle. */
  recordFault(walletId: string): void;
}

export interface LedgerOptions {
  /** Most calls in one transaction. */
  maxBatch?: number;
  /** Most transactions in flight at once (each holds a connection). */
  maxInFlight?: number;
  /** Most calls waiting; past it a call fails at once rather than queueing without bound. */
  maxQueue?: number;
  /** Told the size and timing of every batch that commits (observability, tests). */
  onBatch?: (size: number, timing: BatchTiming) => void;
  /** How each type of effect is applied, by the module that owns its table. */
  effects?: EffectAppliers;
  /** Rules every debit passes through (the low-balance alert). */
  rules?: DebitRule[];
  /** Call ids of CallBilled; injectable so a simulation can replay a run. */
  newCallId?: () => string;
  /** Longest a call waits for its answer before a DatabaseUnavailableError (0 or unset: no bound). */
  deadlineMs?: number;
  /**
   * Check every event against the catalogue's schema as it is staged. Typed code builds them, so
   * the service leaves it off on its hot path; tests turn it on (LEDGER_VALIDATE_EVENTS).
   */
  validateEvents?: boolean;
  /** Encrypts the events' sensitive fields with their wallets' data keys (none: stored in clear). */
  sealer?: EventSealer;
}

export const DEFAULT_LEDGER_OPTIONS = { maxBatch: 128, maxInFlight: 2, maxQueue: 10_000 };

export class LedgerBusyError extends Error {
  constructor() {
    super("The ledger queue is full");
    this.name = "LedgerBusyError";
  }
}

interface Waiting {
  command: AnyBilledCommand;
  /** performance.now() when the call joined the queue. */
  queuedAt: number;
  resolve(result: LedgerResult<unknown>): void;
  reject(error: unknown): void;
}

/** What one transaction needs: the pool, the clock and how batches are written. */
interface Context {
  sql: Sql;
  clock: Clock;
  setup: BatchSetup;
  onBatch?: (size: number, timing: BatchTiming) => void;
  faults: FaultThrottle;
}

export function createLedger(sql: Sql, clock: Clock, options: LedgerOptions = {}): Ledger {
  const { maxBatch, maxInFlight, maxQueue, onBatch, deadlineMs = 0 } = {
    ...DEFAULT_LEDGER_OPTIONS,
    ...options,
  };
  const context: Context = {
    sql,
    clock,
    onBatch,
    faults: new FaultThrottle(),
    setup: {
      effects: options.effects ?? {},
      rules: options.rules ?? [],
      newCallId: options.newCallId ?? (() => randomId(20)),
      validateEvents: options.validateEvents ?? false,
      sealer: options.sealer,
    },
  };
  const queue: Waiting[] = [];
  let inFlight = 0;
  watchLedger(() => ({ queued: queue.length, inFlight, capacity: maxQueue }));

  // With a transaction in flight, a call that finds a slot free waits for the calls that arrive in
  // the same turn of the event loop (a burst of requests read together) and goes with them, rather
  // than taking the slot alone; with none in flight it starts at once.
  let pumpQueued = false;
  function pumpAfterArrivals() {
    if (inFlight === 0) return pump();
    if (pumpQueued) return;
    pumpQueued = true;
    setImmediate(() => {
      pumpQueued = false;
      pump();
    });
  }

  function pump() {
    while (inFlight < maxInFlight && queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      inFlight++;
      runBatch(context, batch).finally(() => {
        inFlight--;
        pump();
      });
    }
  }

  return {
    runBilled<O, R extends ReadSet>(command: BilledCommand<O, R>) {
      if (queue.length >= maxQueue) return (recordLedgerBusy(), Promise.reject(new LedgerBusyError()));
      // Only a caller's own calls are slowed; the wallet's mail and runs are not the caller's to repeat.
      const wait = command.byClient ? context.faults.waitSeconds(command.walletId) : 0;
      if (wait > 0) return Promise.reject(new CallerThrottledError(wait));
      return new Promise<LedgerResult<O>>((resolve, reject) => {
        const waiting: Waiting = {
          command,
          queuedAt: performance.now(),
          resolve: resolve as Waiting["resolve"],
          reject,
        };
        queue.push(waiting);
        // A call still queued at its deadline leaves the queue unrun; one in a transaction may commit.
        expireAfter(waiting, deadlineMs, () => removeFrom(queue, waiting));
        pumpAfterArrivals();
      });
    },
    appendUnbilled: (command) => withDeadline(appendInTransaction(context, command), deadlineMs, "unknown"),
    recordFault: (walletId) => context.faults.record(walletId),
  };
}

/**
 * One batch in one transaction. A command that faults while it is decided and staged fails alone
 * and the others commit together. If the transaction itself fails for a reason of the commands (not
 * the database being out), the batch is split in two and each half tried again, so one bad command
 * costs its neighbours a few transactions, never one each. A database fault is not retried: the
 * database is out, and a batch whose COMMIT was sent may have committed.
 */
async function runBatch(context: Context, batch: Waiting[]): Promise<void> {
  const { sql, clock, setup, onBatch, faults } = context;
  const failed = (waiting: Waiting, error: unknown) => {
    if (waiting.command.byClient && !isDatabaseFault(error)) faults.record(waiting.command.walletId);
    waiting.reject(error);
  };
  let results: (LedgerResult<unknown> | CommandFault)[];
  try {
    const commands = batch.map((w) => w.command);
    const started = performance.now();
    // The data keys are loaded (or made) before the transaction: its locks wait on no key lookup.
    await setup.sealer?.prepare(commands.map((c) => c.walletId));
    let begun = started;
    let returned = started;
    const { results: decided, writes, dbMs } = await inTransaction(sql, async (tx) => {
      begun = performance.now();
      const ran = await runBilledBatch(tx, { commands, now: clock.now(), setup });
      returned = performance.now();
      return ran;
    });
    const committed = performance.now();
    writes.committed();
    recordDatabaseAnswered();
    onBatch?.(commands.length, {
      size: commands.length,
      waitMs: started - batch[0].queuedAt,
      workMs: committed - started,
      // BEGIN, the batch's own round trips, and COMMIT.
      dbMs: (begun - started) + dbMs + (committed - returned),
    });
    results = decided;
  } catch (error) {
    if (batch.length === 1 || isDatabaseFault(error)) {
      if (isDatabaseFault(error)) recordDatabaseUnavailable();
      return batch.forEach((waiting) => failed(waiting, error));
    }
    recordBatchRetry();
    const half = Math.ceil(batch.length / 2);
    await runBatch(context, batch.slice(0, half));
    return await runBatch(context, batch.slice(half));
  }
  batch.forEach((waiting, i) => {
    const result = results[i];
    if (result.kind === "fault") failed(waiting, result.error);
    else waiting.resolve(result);
  });
}

function isDatabaseFault(error: unknown): boolean {
  return error instanceof DatabaseUnavailableError || isDatabaseUnavailable(error);
}

/** An unbilled command in a transaction of its own, under the wallet's lock. */
async function appendInTransaction<O, R extends ReadSet>(context: Context, command: UnbilledCommand<O, R>) {
  const { sql, clock, setup } = context;
  await setup.sealer?.prepare([command.walletId]);
  const { outcome, writes } = await inTransaction(sql, async (tx) => {
    const now = clock.now();
    const reads = new BatchReads([command.reads]);
    const [wallet] = await Promise.all([lockWallet(tx, command.walletId), reads.load(tx, now)]);
    const decision = command.decide({ wallet, reads: reads.valuesOf(command.reads), now });
    const writes = new PendingWrites(setup.effects, reads, {
      validate: setup.validateEvents,
      sealer: setup.sealer,
    });
    if (decision.events?.length) writes.stage(command.walletId, wallet, decision.events, now);
    writes.addEffects(decision.effects);
    await writes.flush(tx, now);
    return { outcome: decision.outcome, writes };
  });
  writes.committed();
  return outcome;
}
