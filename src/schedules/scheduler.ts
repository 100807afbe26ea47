// The scheduler, one per instance: about twice a second it claims the due runs of scheduled webhooks
// and handles each planned time in one ledger transaction: a run (2 credits, `ScheduleFired`, the
// outbox row of its POST), a refusal when the wallet is empty (`ScheduleRunFailed`, free, a failed
// run towards the schedule's pause), or, for runs missed by more than 5 minutes, a skip
// (`ScheduleRunsSkipped`, free, no call).
//
// Exactly once: a transaction handles planned time P only if, under the wallet's row lock, the
// schedule's next run is still P; the events it appends move the next run past P (the fold never
// plans a time at or before one dealt with). Every change to a schedule row happens under its
// wallet's lock, so two transactions for P are serialized and the second finds P gone. Claims only
// keep instances from doing that work twice.
import type { Sql } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Clock } from "../clock.ts";
import { type HealthRules, newDeliveryId, newMessageId } from "../webhooks/mod.ts";
import { claimDueRuns, releaseClaim, type ScheduleClaim, sweepExpiredClaims } from "./claims.ts";
import { fireRunCommand, type RunOutcome, skipMissedRunsCommand } from "./commands.ts";
import { isMissed } from "./plan.ts";
import { logError } from "../log.ts";
import { createBackoff, DEFAULT_POLL_MS } from "../backoff.ts";
import { recordScheduleRun } from "../metrics/schedule_metrics.ts";

export type { RunOutcome };

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
  /** WEBHOOK_PAUSE_AFTER_FAILURES: refused runs in a row that turn a schedule inactive; default 20. */
  health?: HealthRules;
}

export interface Scheduler {
  /** Stops claiming and waits for the runs in hand to commit. */
  stop(): Promise<void>;
}

export type PassSummary = Record<RunOutcome, number>;

const DEFAULT_BATCH_SIZE = 200;
const DEFAULT_LEASE_MS = 30_000;
/** Batches one pass takes at most before it yields to the next tick. */
const MAX_BATCHES_PER_PASS = 50;
const CLAIM_SWEEP_MS = 10 * 60 * 1000;
/** Claims that expired this long ago belong to schedules that have moved on. */
const STALE_CLAIM_MS = 60 * 60 * 1000;

export function startScheduler(options: SchedulerOptions): Scheduler {
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let pass: Promise<void> | undefined;
  let lastSweep = -Infinity;
  // While the database is out, passes come less often and the outage is logged once.
  const backoff = createBackoff("scheduler pass");

  async function work() {
    await runDueSchedules(options);
    const now = options.clock.now().getTime();
    if (now - lastSweep > CLAIM_SWEEP_MS) {
      lastSweep = now;
      await sweepExpiredClaims(options.sql, new Date(now - STALE_CLAIM_MS));
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
    const outcome = isMissed(claim.plannedAt, claimedAt)
      ? await options.ledger.appendUnbilled(skipMissedRunsCommand(claim))
      : await runBilled(options, claim);
    // A run that did not happen frees the planned time at once rather than after the lease.
    if (outcome === "lost") await releaseClaim(options.sql, claim).catch(() => {});
    recordScheduleRun(outcome, (claimedAt.getTime() - claim.plannedAt.getTime()) / 1000);
    return outcome;
  } catch (error) {
    // The claim stays until its lease runs out, then the planned time is tried again.
    logError("scheduled run failed", error, { webhookId: claim.webhookId, plannedAt: claim.plannedAt });
    recordScheduleRun("failed", (claimedAt.getTime() - claim.plannedAt.getTime()) / 1000);
    return "failed";
  }
}

async function runBilled(options: SchedulerOptions, claim: ScheduleClaim): Promise<RunOutcome> {
  const result = await options.ledger.runBilled(fireRunCommand(claim, newDeliveryId(), {
    ...(options.health ? { rules: options.health } : {}),
    alertIds: {
      deliveryIds: [newDeliveryId(), newDeliveryId()],
      messageIds: [newMessageId(), newMessageId()],
    },
  }));
  return result.kind === "unauthorized" ? "lost" : result.outcome;
}
