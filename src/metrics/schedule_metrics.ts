// Schedule families: runs by outcome, the lateness of each run fired against its planned time, the
// runs late by more than LATE_RUN_SECONDS, and claims lost to another instance.
import { Counter, Histogram } from "prom-client";
import { metricsOn, PREFIX, registry } from "./registry.ts";

/** A run this late is counted late: the scheduler polls every 0.5 s, so it should start within 2 s. */
export const LATE_RUN_SECONDS = 2;

const runs = new Counter({
  name: `${PREFIX}schedule_runs_total`,
  help: "Scheduled runs handled, by outcome (fired, refused, skipped, lost, failed)",
  labelNames: ["outcome"],
  registers: [registry],
});
const lateRuns = new Counter({
  name: `${PREFIX}schedule_late_runs_total`,
  help: `Runs fired more than ${LATE_RUN_SECONDS} s after their planned time`,
  registers: [registry],
});
const lateness = new Histogram({
  name: `${PREFIX}schedule_lateness_seconds`,
  help: "How long after its planned time each run was handled",
  buckets: [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
  registers: [registry],
});
const claimsLost = new Counter({
  name: `${PREFIX}schedule_claims_lost_total`,
  help: "Claimed runs another instance or a newer plan had already dealt with",
  registers: [registry],
});

const OUTCOMES = new Set(["fired", "refused", "skipped", "lost", "failed"]);
for (const outcome of OUTCOMES) runs.labels(outcome).inc(0);

/** A claimed planned time handled at `latenessSeconds` after it, with its outcome. */
export function recordScheduleRun(outcome: string, latenessSeconds: number): void {
  if (!metricsOn()) return;
  runs.labels(OUTCOMES.has(outcome) ? outcome : "other").inc();
  if (outcome === "lost") claimsLost.inc();
  if (outcome === "skipped" || outcome === "lost") return;
  lateness.observe(Math.max(0, latenessSeconds));
  if (latenessSeconds > LATE_RUN_SECONDS) lateRuns.inc();
}
