// GET /token/usage, pure: a wallet's calls, credits and errors per UTC day and endpoint type, as
// JSON (every day of the range, oldest first) or as CSV (one line per day and type with calls).
import type { CallDecision } from "../ledger/command.ts";
import { firstDay, USAGE_TYPES, type UsageRow, utcDay } from "../../projections/daily_usage.ts";
import { answer, jsonReply, type Reply } from "../calls/reply.ts";

export const DEFAULT_USAGE_DAYS = 30;
const DAY_MS = 24 * 3600 * 1000;

export interface UsageCounts {
  calls: number;
  credits: number;
  errors: number;
}

export interface UsageDay {
  date: string;
  byType: Record<string, UsageCounts>;
}

/** Known types in their documented order, then any other in name order. */
function typeOrder(a: string, b: string): number {
  const rank = (t: string) => {
    const i = (USAGE_TYPES as readonly string[]).indexOf(t);
    return i < 0 ? USAGE_TYPES.length : i;
  };
  return rank(a) - rank(b) || a.localeCompare(b);
}

/** The `days` days up to `now`'s UTC day, oldest first, each with the types it had calls of. */
export function usageDays(rows: UsageRow[], days: number, now: Date): UsageDay[] {
  const from = firstDay(now, days);
  const report: UsageDay[] = [];
  for (let i = 0; i < days; i++) {
    report.push({ date: utcDay(new Date(Date.parse(from) + i * DAY_MS)), byType: {} });
  }
  const byDate = new Map(report.map((day) => [day.date, day]));
  const sorted = [...rows].sort((a, b) => typeOrder(a.type, b.type));
  for (const row of sorted) {
    const day = byDate.get(row.day);
    if (day) day.byType[row.type] = { calls: row.calls, credits: row.credits, errors: row.errors };
  }
  return report;
}

export const CSV_HEADER = "date,type,calls,credits,errors";

export function usageCsv(report: UsageDay[]): string {
  const lines = [CSV_HEADER];
  for (const { date, byType } of report) {
    for (const [type, c] of Object.entries(byType)) {
      lines.push(`${date},${type},${c.calls},${c.credits},${c.errors}`);
    }
  }
  return lines.join("\r\n") + "\r\n";
}

export function usageReport(
  rows: UsageRow[] | undefined,
  options: { days: number; csv: boolean; now: Date },
): CallDecision<Reply> {
  const report = usageDays(rows ?? [], options.days, options.now);
  if (!options.csv) return answer(jsonReply(200, { days: report }));
  return answer({ status: 200, contentType: "text/csv; charset=utf-8", body: usageCsv(report) });
}
