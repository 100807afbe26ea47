// Usage per wallet, UTC day and endpoint type: calls, credits charged and errors, the counters
// GET /token/usage answers from. Rows are sums, so a transaction adds its calls to them in one
// upsert; replay folds the same sums event by event.
import type { StoredEvent } from "../events/catalogue.ts";
import { defineProjection, type ReadKind } from "./projection.ts";
import { LOG_ENDPOINTS } from "./call_logs.ts";

/**
 * The endpoint types usage is counted under, in the order reports list them: the call log's
 * endpoints, and scheduled runs (logged with the deliveries) apart, before payments.
 */
export const USAGE_TYPES: readonly string[] = [
  ...LOG_ENDPOINTS.filter((endpoint) => endpoint !== "payment"),
  "scheduled",
  "payment",
];

/** The most days a report covers; the read loads this many, the route picks its own range. */
export const MAX_USAGE_DAYS = 90;
const DAY_MS = 24 * 3600 * 1000;

export interface UsageRow {
  wallet_id: string;
  /** The UTC day, `YYYY-MM-DD`. */
  day: string;
  type: string;
  calls: number;
  credits: number;
  errors: number;
}

/** The day texts met lately, by day number: formatting a date costs more than the rest of a fold. */
const dayTexts = new Map<number, string>();
const MAX_DAY_TEXTS = 4096;

/** The UTC day of a time, `YYYY-MM-DD`. */
export function utcDay(at: Date): string {
  const day = Math.floor(at.getTime() / DAY_MS);
  let text = dayTexts.get(day);
  if (text === undefined) {
    // An invalid date throws here, before anything is kept.
    text = at.toISOString().slice(0, 10);
    if (dayTexts.size >= MAX_DAY_TEXTS) dayTexts.clear();
    dayTexts.set(day, text);
  }
  return text;
}

/** The first day a report of `days` days ending at `now` covers. */
export function firstDay(now: Date, days: number): string {
  return utcDay(new Date(now.getTime() - (days - 1) * DAY_MS));
}

/**
 * What one event adds to its day's usage, or null when it is not a call. Credits are what the call
 * was charged: a delivery attempt moves none (its email or run was charged), nor does a payment.
 * The day is worked out only for the events that count.
 */
export function usageOf(event: StoredEvent): UsageRow | null {
  const counted = countedOf(event);
  if (!counted) return null;
  return { wallet_id: event.walletId, day: utcDay(event.recordedAt), calls: 1, ...counted };
}

function countedOf(event: StoredEvent): Pick<UsageRow, "type" | "credits" | "errors"> | null {
  switch (event.type) {
    case "CallBilled": {
      // Scheduled runs are billed as CRON calls and logged with the deliveries.
      const type = event.data.method === "CRON" ? "scheduled" : event.data.endpoint;
      return { type, credits: event.data.cost, errors: event.data.status >= 400 ? 1 : 0 };
    }
    case "DeliveryAttempted":
      return { type: "webhook-delivery", credits: 0, errors: event.data.ok ? 0 : 1 };
    case "CreditsPurchased":
      return { type: "payment", credits: 0, errors: 0 };
    default:
      return null;
  }
}

function addUsage(row: UsageRow | undefined, added: UsageRow): UsageRow {
  if (!row) return added;
  return {
    ...row,
    calls: row.calls + added.calls,
    credits: row.credits + added.credits,
    errors: row.errors + added.errors,
  };
}

/**
 * evolve(undefined, event) is the event's own contribution and evolve(row, event) adds it, so the
 * ledger folds a batch's calls from nothing and its upsert adds them to the stored sums (additive).
 * Its rows leave with a deactivated wallet; that also makes replay fold the sums.
 */
export const dailyUsageProjection = defineProjection<UsageRow>({
  table: "daily_usage",
  columns: ["wallet_id", "day", "type", "calls", "credits", "errors"],
  keyColumns: ["wallet_id", "day", "type"],
  // The whole usage row carries the key columns; the counters beside them do no harm.
  keyRow: usageOf,
  evolve(row, event) {
    const usage = usageOf(event);
    return usage ? addUsage(row, usage) : row;
  },
  readsPrevious: false,
  // A batch's rows are its own calls: the table adds them to the sums it holds.
  additive: ["calls", "credits", "errors"],
  removedWithWallet: true,
});

/**
 * A wallet's usage of the last MAX_USAGE_DAYS days up to the batch's time, as a ledger read, kept
 * current with the batch's own calls by the same sums.
 */
export const dailyUsageRead: ReadKind<string, UsageRow[]> = {
  name: "daily usage",
  id: (walletId) => walletId,
  async load(sql, walletIds, now) {
    const rows = await sql<UsageRow[]>`
      select wallet_id, day::text as day, type, calls, credits, errors from daily_usage
      where wallet_id = any(${walletIds}) and day >= ${firstDay(now, MAX_USAGE_DAYS)}::date`;
    const found = new Map<string, UsageRow[]>();
    for (const row of rows) {
      const same = found.get(row.wallet_id);
      if (same) same.push(row);
      else found.set(row.wallet_id, [row]);
    }
    return found;
  },
  touches: (event) => usageOf(event) ? [event.walletId] : [],
  evolve(rows = [], event) {
    const usage = usageOf(event)!;
    // The rows are the wallet's: its day and type name the row.
    const at = rows.findIndex((row) => row.day === usage.day && row.type === usage.type);
    if (at < 0) return [...rows, usage];
    return rows.map((row, i) => i === at ? addUsage(row, usage) : row);
  },
};
