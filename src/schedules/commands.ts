// What the scheduler decides about one claimed planned time, purely under the wallet's lock with the
// schedule row locked: a run (2 credits, ScheduleFired, the POST queued), a refusal when the wallet
// cannot pay (ScheduleRunFailed, free, and a failed run of the webhook's health: after
// WEBHOOK_PAUSE_AFTER_FAILURES in a row the schedule turns inactive, with its alert), or, for runs
// missed by more than the grace period, a skip (ScheduleRunsSkipped, free, not a call). A claim gone
// stale (the schedule changed, moved on or went, or another instance took the claim over) is no
// call at all: outcome "lost".
import { newEvent } from "../../events/catalogue.ts";
import type { BilledCommand, DecideState, Decision, UnbilledCommand } from "../ledger/command.ts";
import { INSUFFICIENT_CREDITS } from "../ledger/command.ts";
import { read, type ReadValues } from "../ledger/reads.ts";
import { lockedScheduleRead, runMessageId, type ScheduleRow } from "../../projections/schedules.ts";
import { webhookRead } from "../../projections/webhooks.ts";
import { webhookHealthRead } from "../../projections/webhook_health.ts";
import {
  type AlertIds,
  DEFAULT_HEALTH_RULES,
  healthAfterFailure,
  type HealthRules,
  queueDelivery,
} from "../webhooks/mod.ts";
import { claimHeldRead, type EndScheduleClaim, type ScheduleClaim } from "./claims.ts";
import { missedPhrase, nextAfterRun, planAfterMiss, RUN_COST, scheduledRunPayload } from "./plan.ts";

export type RunOutcome = "fired" | "refused" | "skipped" | "lost" | "failed";

const RUN_METHOD = "CRON";
/** The status a refused run records, as its call log shows it. */
const UNPAID_STATUS = 402;

function runReads(claim: ScheduleClaim) {
  const target = { walletId: claim.walletId, webhookId: claim.webhookId };
  return {
    schedule: read(lockedScheduleRead, target),
    claim: read(claimHeldRead, claim),
    webhook: read(webhookRead, target),
    health: read(webhookHealthRead, target),
  };
}
type RunReads = ReturnType<typeof runReads>;

export interface RunRules {
  /** When refused runs turn the schedule inactive (WEBHOOK_PAUSE_AFTER_FAILURES); default 20. */
  rules?: HealthRules;
  /** Ids of the alerts a pause may queue; without them none is queued. */
  alertIds?: AlertIds;
}

/** The schedule when the claim still stands: held, active and still planned at the claimed time. */
function heldSchedule(claim: ScheduleClaim, reads: ReadValues<RunReads>): ScheduleRow | undefined {
  const schedule = reads.schedule;
  const due = schedule?.active && schedule.next_run_at?.getTime() === claim.plannedAt.getTime();
  return reads.claim && due ? schedule : undefined;
}

/** A run at its planned time (or late within the grace period): one billed command. */
export function fireRunCommand(
  claim: ScheduleClaim,
  deliveryId: string,
  options: RunRules = {},
): BilledCommand<RunOutcome, RunReads> {
  const { walletId, webhookId, plannedAt } = claim;
  const ended: EndScheduleClaim = { type: "endScheduleClaim", claim };
  const run = (now: Date, schedule: ScheduleRow) => ({
    webhookId,
    plannedAt: plannedAt.toISOString(),
    executedAt: now.toISOString(),
    nextRunAt: nextAfterRun(schedule, plannedAt)?.toISOString() ?? null,
  });
  return {
    walletId,
    price: RUN_COST,
    call: { method: RUN_METHOD, path: webhookId, endpoint: "webhook-delivery", startedAt: performance.now() },
    reads: runReads(claim),
    decide({ wallet, reads, now }: DecideState<RunReads>): Decision<RunOutcome> {
      const schedule = heldSchedule(claim, reads);
      if (!schedule) return { outcome: "lost" };
      const delivery = queueDelivery({
        kind: "scheduled",
        id: deliveryId,
        walletId,
        webhookId,
        messageId: runMessageId(webhookId, plannedAt),
        cost: RUN_COST,
        payload: scheduledRunPayload(webhookId, { plannedAt, executedAt: now, walletHash: wallet.wallet_id }),
      });
      return {
        outcome: "fired",
        log: { status: 200 },
        events: [newEvent("ScheduleFired", { ...run(now, schedule), deliveryId })],
        effects: [delivery, ended],
      };
    },
    // An empty wallet skips the delivery, charges nothing and keeps the schedule (CONTRACT section 10),
    // but the refusal is a failed run: WEBHOOK_PAUSE_AFTER_FAILURES of them in a row turn the schedule
    // inactive, as failed deliveries do, so an unpaid schedule stops writing to the log.
    unpaid({ wallet, reads, now }: DecideState<RunReads>): Decision<RunOutcome> {
      const schedule = heldSchedule(claim, reads);
      if (!schedule) return { outcome: "lost" };
      const health = healthAfterFailure({
        walletId,
        wallet,
        webhook: reads.webhook,
        health: reads.health,
        status: UNPAID_STATUS,
        error: INSUFFICIENT_CREDITS,
        unpaid: true,
        at: now,
        now,
        rules: options.rules ?? DEFAULT_HEALTH_RULES,
        ...(options.alertIds ? { alertIds: options.alertIds } : {}),
      });
      const refused = newEvent("ScheduleRunFailed", {
        ...run(now, schedule),
        error: INSUFFICIENT_CREDITS,
        status: UNPAID_STATUS,
      });
      return {
        outcome: "refused",
        log: { status: UNPAID_STATUS, error: INSUFFICIENT_CREDITS },
        events: [refused, ...health.events],
        effects: [ended, ...health.effects],
      };
    },
  };
}

/** Runs missed by more than the grace period: recorded, not charged, not a call. */
export function skipMissedRunsCommand(claim: ScheduleClaim): UnbilledCommand<RunOutcome, RunReads> {
  return {
    walletId: claim.walletId,
    reads: runReads(claim),
    decide({ wallet, reads, now }) {
      const schedule = wallet && !wallet.deactivated_at ? heldSchedule(claim, reads) : undefined;
      if (!schedule) return { outcome: "lost" };
      const plan = planAfterMiss(schedule, now);
      const ended: EndScheduleClaim = { type: "endScheduleClaim", claim };
      return {
        outcome: "skipped",
        events: [newEvent("ScheduleRunsSkipped", {
          webhookId: claim.webhookId,
          firstPlannedAt: claim.plannedAt.toISOString(),
          missedBefore: plan.missedBefore.toISOString(),
          error: missedPhrase(claim.plannedAt, plan.missedBefore),
          nextRunAt: plan.nextRunAt?.toISOString() ?? null,
        })],
        effects: [ended],
      };
    },
  };
}
