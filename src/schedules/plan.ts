// What the scheduler decides about one due planned time (CONTRACT section 10), as pure functions of
// the schedule, the planned time and the time now: run it (possibly late) or, when it was missed by
// more than the grace period, skip it with every other run missed as long, and plan the next one.
import { nextRunAt } from "../../projections/cron.ts";
import type { ScheduledRunPayload } from "../webhooks/mod.ts";

/** Credits a run costs (spec section 8). */
export const RUN_COST = 2;

/** A run at most this late still fires (once); older missed runs are skipped. */
export const MISSED_GRACE_MS = 5 * 60 * 1000;

export interface Plan {
  cron: string;
  timezone: string;
}

/** Whether the planned time was missed by more than the grace period at `now`. */
export function isMissed(plannedAt: Date, now: Date): boolean {
  return now.getTime() - plannedAt.getTime() > MISSED_GRACE_MS;
}

/**
 * The run after the one planned at `plannedAt`, counted from the planned time rather than from
 * now: a run late by a few seconds does not move the plan, and each planned time within the grace
 * period still gets its run.
 */
export function nextAfterRun(plan: Plan, plannedAt: Date): Date | null {
  return safeNextRun(plan, plannedAt);
}

/**
 * After runs were missed by more than the grace period: everything planned before `missedBefore`
 * is skipped, and the plan resumes at the first planned time that is still within it (which may be
 * due at once, as a late run) or else the first one after now.
 */
export function planAfterMiss(plan: Plan, now: Date): { missedBefore: Date; nextRunAt: Date | null } {
  const missedBefore = new Date(now.getTime() - MISSED_GRACE_MS);
  // Planned times are whole minutes; one millisecond before the cutoff keeps a run planned exactly
  // at it, which is exactly 5 minutes late and still fires.
  return { missedBefore, nextRunAt: safeNextRun(plan, new Date(missedBefore.getTime() - 1)) };
}

function safeNextRun(plan: Plan, after: Date): Date | null {
  try {
    return nextRunAt(plan.cron, plan.timezone, after);
  } catch {
    // Configured under older rules that refuse it now: it stays unplanned instead of failing a run.
    return null;
  }
}

/** The body POSTed for a run (CONTRACT section 10). */
export function scheduledRunPayload(
  webhookId: string,
  run: { plannedAt: Date; executedAt: Date; walletHash: string },
): ScheduledRunPayload {
  return {
    type: "scheduled_webhook_run",
    webhookId,
    scheduledFor: run.plannedAt.toISOString(),
    executedAt: run.executedAt.toISOString(),
    walletHash: run.walletHash,
  };
}

/** `lastError` of runs skipped after downtime. */
export function missedPhrase(firstPlannedAt: Date, missedBefore: Date): string {
  return `Skipped: the runs planned from ${firstPlannedAt.toISOString()} to before ${missedBefore.toISOString()} ` +
    `were missed by more than ${MISSED_GRACE_MS / 60_000} minutes`;
}
