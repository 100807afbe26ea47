// The scheduler, one per instance: about twice a second it claims the due runs of scheduled webhooks
// and handles each planned time in one ledger transaction: a run (2 credits, `ScheduleFired`, the
// outbox row of its POST), a refusal when the wallet is empty (`ScheduleRunFailed`, free), or, for
// runs missed by more than 5 minutes, a skip (`ScheduleRunsSkipped`, free, no call).
//
// Exactly once: a transaction handles planned time P only if, under the wallet's row lock, the
// schedule's next run is still P; the events it appends move the next run past P (the fold never
// plans a time at or before one dealt with). Every change to a schedule row happens under its
// wallet's lock, so two transactions for P are serialized and the second finds P gone. Claims only
// keep instances from doing that work twice.
import type { Sql, Tx } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Clock } from "../clock.ts";
import { type Decision, failure, INSUFFICIENT_CREDITS, textReply } from "../ledger/command.ts";
import { newEvent } from "../../events/catalogue.ts";
import { readWalletEvents } from "../../events/store.ts";
import {
  foldSchedules,
  insertScheduleIfMissing,
  lockSchedule,
  type ScheduleRow,
  walletsWithUnplannedSchedules,
} from "../../projections/schedules.ts";
import { enqueueDelivery } from "../webhooks/outbox.ts";
import { claimDueRuns, releaseClaim, type ScheduleClaim, sweepExpiredClaims, takeClaim } from "./claims.ts";
import {
  isMissed,
  missedPhrase,
  nextAfterRun,
  planAfterMiss,
  RUN_COST,
  runMessageId,
  scheduledRunPayload,
} from "./plan.ts";
import { logError } from "../log.ts";
import { createBackoff } from "../backoff.ts";

export interface SchedulerOptions {
  sql: Sql;
  ledger: Ledger;
  clock: Clock;
  /** How often due runs are looked for; well under the 2 s a run may start after its planned time. */
  pollMs?: number;
  /** Most runs claimed at once; their ledger commands share transactions (group commit). */
  batchSize?: number;
  /** How long a claim keeps other instances away; past it, a claim of a dead instance is taken over. */
  leaseMs?: number;
}

export interface Scheduler {
  /** Stops claiming and waits for the runs in hand to commit. */
  stop(): Promise<void>;
}

export type RunOutcome = "fired" | "refused" | "skipped" | "lost" | "failed";
export type PassSummary = Record<RunOutcome, number>;

export const DEFAULT_POLL_MS = 500;
const DEFAULT_BATCH_SIZE = 200;
const DEFAULT_LEASE_MS = 30_000;
/** Batches one pass takes at most before it yields to the next tick. */
const MAX_BATCHES_PER_PASS = 50;
const CLAIM_SWEEP_MS = 10 * 60 * 1000;
/** Claims that expired this long ago belong to schedules that have moved on. */
const STALE_CLAIM_MS = 60 * 60 * 1000;
const ADOPT_LIMIT = 1000;
const RUN_METHOD = "CRON";

/** A claim that turned out stale in the run's transaction: the schedule changed, moved on or went. */
export class ClaimLostError extends Error {
  constructor(claim: ScheduleClaim) {
    super(`Run of "${claim.webhookId}" planned at ${claim.plannedAt.toISOString()} is no longer due`);
    this.name = "ClaimLostError";
  }
}

export function startScheduler(options: SchedulerOptions): Scheduler {
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let pass: Promise<void> | undefined;
  let lastSweep = 0;
  let adopted = false;
  // While the database is out, passes come less often and the outage is logged once.
  const backoff = createBackoff("scheduler pass");

  async function work() {
    if (!adopted) {
      await adoptUnplannedSchedules(options.sql, options.ledger);
      adopted = true;
    }
    await runDueSchedules(options);
    if (Date.now() - lastSweep > CLAIM_SWEEP_MS) {
      lastSweep = Date.now();
      await sweepExpiredClaims(options.sql, new Date(options.clock.now().getTime() - STALE_CLAIM_MS));
    }
  }

  function tick() {
    pass = work()
      .then(() => backoff.succeeded(), (error) => backoff.failed(error))
      .finally(() => {
        pass = undefined;
        if (!stopping) timer = setTimeout(tick, backoff.delay(pollMs));
      });
  }

  timer = setTimeout(tick, 0);
  return {
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await pass;
    },
  };
}

/**
 * One pass: claims due runs in batches until none is left (or the pass has taken its share) and
 * handles them, the runs of a batch concurrently so their ledger commands share commits.
 */
export async function runDueSchedules(options: SchedulerOptions): Promise<PassSummary> {
  const limit = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const summary: PassSummary = { fired: 0, refused: 0, skipped: 0, lost: 0, failed: 0 };
  for (let batch = 0; batch < MAX_BATCHES_PER_PASS; batch++) {
    const now = options.clock.now();
    const claims = await claimDueRuns(options.sql, { now, limit, leaseMs });
    const outcomes = await Promise.all(claims.map((claim) => handleClaim(options, claim, now)));
    for (const outcome of outcomes) summary[outcome]++;
    // A run late within the grace period plans the next one from its planned time, which may be
    // due too: the loop takes those at once.
    if (claims.length === 0) break;
  }
  return summary;
}

/** Handles one claimed planned time; never throws. */
export async function handleClaim(
  options: SchedulerOptions,
  claim: ScheduleClaim,
  claimedAt: Date,
): Promise<RunOutcome> {
  try {
    if (isMissed(claim.plannedAt, claimedAt)) return await skipMissedRuns(options.ledger, claim);
    return await fireRun(options.ledger, claim);
  } catch (error) {
    if (error instanceof ClaimLostError) {
      await releaseClaim(options.sql, claim).catch(() => {});
      return "lost";
    }
    // The claim stays until its lease runs out, then the planned time is tried again.
    logError("scheduled run failed", error, { webhookId: claim.webhookId, plannedAt: claim.plannedAt });
    return "failed";
  }
}

/**
 * The schedule under the run's transaction when the claim still stands: the schedule exists and is
 * active, its next run is the claimed one, and the claim is this instance's (now ended).
 */
async function heldSchedule(tx: Tx, claim: ScheduleClaim): Promise<ScheduleRow | undefined> {
  const schedule = await lockSchedule(tx, claim.walletId, claim.webhookId);
  const held = await takeClaim(tx, claim);
  const due = schedule?.active && schedule.next_run_at?.getTime() === claim.plannedAt.getTime();
  return held && due ? schedule : undefined;
}

/** A run at its planned time (or late within the grace period): one billed ledger command. */
async function fireRun(ledger: Ledger, claim: ScheduleClaim): Promise<RunOutcome> {
  const { walletId, webhookId, plannedAt } = claim;
  const result = await ledger.run({
    walletId,
    // Cost 0 so that decide runs on an empty wallet too: the refusal must move the schedule on in
    // the same transaction. decide charges the run itself.
    cost: 0,
    call: { method: RUN_METHOD, path: webhookId, endpoint: "webhook-delivery", startedAt: performance.now() },
    async decide(tx, wallet, now): Promise<Decision> {
      const schedule = await heldSchedule(tx, claim);
      // Thrown, not answered: a run that does not happen leaves no call-log entry.
      if (!schedule) throw new ClaimLostError(claim);
      const next = nextAfterRun(schedule, plannedAt);
      const run = {
        webhookId,
        plannedAt: plannedAt.toISOString(),
        executedAt: now.toISOString(),
        nextRunAt: next?.toISOString() ?? null,
      };
      if (wallet.balance < RUN_COST) {
        return {
          ...failure(402, INSUFFICIENT_CREDITS),
          charge: 0,
          events: [newEvent("ScheduleRunFailed", { ...run, error: INSUFFICIENT_CREDITS })],
        };
      }
      const deliveryId = await enqueueDelivery(tx, {
        walletId,
        webhookId,
        kind: "scheduled",
        payload: scheduledRunPayload(webhookId, { plannedAt, executedAt: now, walletHash: wallet.wallet_id }),
        cost: RUN_COST,
        now,
        messageId: runMessageId(webhookId, plannedAt),
      });
      return {
        reply: textReply(200, "Run fired"),
        charge: RUN_COST,
        events: [newEvent("ScheduleFired", { ...run, deliveryId })],
      };
    },
  });
  if (result.kind === "unauthorized") throw new ClaimLostError(claim);
  return result.reply.status === 402 ? "refused" : "fired";
}

/** Runs missed by more than the grace period: recorded, not charged, not a call. */
async function skipMissedRuns(ledger: Ledger, claim: ScheduleClaim): Promise<RunOutcome> {
  const events = await ledger.append(claim.walletId, async (tx, wallet, now) => {
    if (!wallet || wallet.deactivated_at) return [];
    const schedule = await heldSchedule(tx, claim);
    if (!schedule) return [];
    const plan = planAfterMiss(schedule, now);
    return [newEvent("ScheduleRunsSkipped", {
      webhookId: claim.webhookId,
      firstPlannedAt: claim.plannedAt.toISOString(),
      missedBefore: plan.missedBefore.toISOString(),
      error: missedPhrase(claim.plannedAt, plan.missedBefore),
      nextRunAt: plan.nextRunAt?.toISOString() ?? null,
    })];
  });
  if (events.length === 0) throw new ClaimLostError(claim);
  return "skipped";
}

/**
 * Webhooks scheduled before the schedule model existed have no row in it: their rows are rebuilt
 * from the wallet's log, as a replay builds them, under the wallet's lock. Their plans start at
 * their configuration time, so runs missed since are skipped as after any downtime.
 */
export async function adoptUnplannedSchedules(sql: Sql, ledger: Ledger): Promise<number> {
  const wallets = await walletsWithUnplannedSchedules(sql, ADOPT_LIMIT);
  for (const walletId of wallets) {
    await ledger.append(walletId, async (tx) => {
      for (const row of foldSchedules(await readWalletEvents(tx, walletId)).values()) {
        await insertScheduleIfMissing(tx, row);
      }
      return [];
    });
  }
  return wallets.length;
}
