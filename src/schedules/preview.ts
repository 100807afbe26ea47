// The next runs of a schedule before it is saved (issue 27), pure: the same parsing, validation and
// run planning as a scheduled webhook (cron.ts), so a preview and the scheduler cannot disagree.
import type { Parsed } from "../parsed.ts";
import { canonicalTimezone, nextRunAt, validateSchedule } from "../../projections/cron.ts";
import { nextAfterRun } from "./plan.ts";

/** Runs a preview lists at most. */
export const PREVIEW_RUNS = 5;

/** One planned run: the instant in UTC and the same instant on the zone's wall clock. */
export interface PreviewRun {
  /** ISO 8601 in UTC, as the scheduler plans it (`scheduledFor` of the run's payload). */
  at: string;
  /** ISO 8601 with the zone's offset then, e.g. `2027-03-01T09:00:00+01:00`. */
  local: string;
}

export interface SchedulePreview {
  cron: string;
  /** The zone as the schedule would keep it (`europe/paris` reads `Europe/Paris`). */
  timezone: string;
  runs: PreviewRun[];
}

/**
 * The first PREVIEW_RUNS runs strictly after `now`, or the 400 phrase a webhook with this schedule
 * would get (a schedule that never fires again included). Fewer runs when the schedule ends sooner.
 */
export function schedulePreview(cron: string, timezone: string, now: Date): Parsed<SchedulePreview> {
  const problem = validateSchedule(cron, timezone, now);
  if (problem !== null) return { ok: false, phrase: problem };
  const zone = canonicalTimezone(timezone);
  const plan = { cron, timezone: zone };
  // The first run as a new schedule plans it, each next one as the scheduler does after a run.
  const runs: PreviewRun[] = [];
  for (let at = nextRunAt(cron, zone, now); at !== null && runs.length < PREVIEW_RUNS;) {
    runs.push({ at: at.toISOString(), local: wallClock(at, zone) });
    at = nextAfterRun(plan, at);
  }
  return { ok: true, value: { cron, timezone: zone, runs } };
}

/** The instant on the zone's wall clock, with the offset and without the bracketed zone name. */
function wallClock(at: Date, zone: string): string {
  return Temporal.Instant.fromEpochMilliseconds(at.getTime()).toZonedDateTimeISO(zone)
    .toString({ timeZoneName: "never", fractionalSecondDigits: 0 });
}
