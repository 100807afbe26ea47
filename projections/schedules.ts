// The schedule read model: each scheduled webhook's plan (cron, zone, active, next planned run) and
// the outcome of its last run. The scheduler finds due runs here; the webhook object shows it.
// Kept by the webhook events (a new or changed schedule is planned from the event's time), the run
// events (each carries the plan after it) and the attempts of run deliveries (success or failure).
import type { Queryable } from "../src/db/connect.ts";
import type { StoredEvent } from "../events/catalogue.ts";
import { defineProjection, rowRead, walletRowsRead } from "./projection.ts";
import { touchedWebhookRow, type WebhookKey, webhookKeyRow } from "./webhooks.ts";
import type { WebhookConfigData } from "./webhook_config_data.ts";
import { nextRunAt } from "./cron.ts";

export interface ScheduleRow {
  wallet_id: string;
  webhook_id: string;
  cron: string;
  timezone: string;
  active: boolean;
  /** Null while paused, or for a cron this version cannot plan. */
  next_run_at: Date | null;
  /** Every planned time up to here was dealt with (run, refused or skipped): none is planned again. */
  handled_through: Date | null;
  last_run_at: Date | null;
  last_status: "success" | "failure" | null;
  last_error: string | null;
  /** The outbox row of the last run: only its attempt tells the run's outcome. */
  last_delivery_id: string | null;
}

const COLUMNS = [
  "wallet_id",
  "webhook_id",
  "cron",
  "timezone",
  "active",
  "next_run_at",
  "handled_through",
  "last_run_at",
  "last_status",
  "last_error",
  "last_delivery_id",
] as const;

/**
 * The row a webhook configuration leaves, planned from `at`. A plan that did not change (only the
 * URL or headers did) keeps its next run, so an edit never moves or drops a due run; a new, changed
 * or resumed plan starts after `at` (no replay of runs missed while paused) and never at or before
 * a planned time already dealt with, whatever the clocks of the instances say. A new webhook
 * starts without run history. Pure.
 */
export function scheduleAfterConfig(
  previous: ScheduleRow | undefined,
  options: { walletId: string; config: WebhookConfigData; at: Date; created: boolean },
): ScheduleRow | undefined {
  const { walletId, config } = options;
  if (!config.schedule) return undefined;
  const { cron, timezone, active } = config.schedule;
  const samePlan = previous !== undefined && previous.cron === cron && previous.timezone === timezone &&
    previous.active === active;
  const handled = previous?.handled_through ?? null;
  const from = handled !== null && handled > options.at ? handled : options.at;
  const history = options.created || previous === undefined ? undefined : previous;
  return {
    wallet_id: walletId,
    webhook_id: config.webhookId,
    cron,
    timezone,
    active,
    next_run_at: samePlan ? previous.next_run_at : active ? plannedAfter(cron, timezone, from) : null,
    handled_through: handled,
    last_run_at: history?.last_run_at ?? null,
    last_status: history?.last_status ?? null,
    last_error: history?.last_error ?? null,
    last_delivery_id: history?.last_delivery_id ?? null,
  };
}

/** The first planned run after `after`; null rather than a throw for a cron this version refuses. */
function plannedAfter(cron: string, timezone: string, after: Date): Date | null {
  try {
    return nextRunAt(cron, timezone, after);
  } catch {
    // Validated when configured; a rule tightened since must not make the fold (and the call that
    // changed the webhook) fail. Such a schedule waits, unplanned, for a valid configuration.
    return null;
  }
}

function dateOrNull(iso: string | null): Date | null {
  return iso === null ? null : new Date(iso);
}

function later(a: Date | null, b: Date): Date {
  return a !== null && a > b ? a : b;
}

/** Pure fold step of the schedule model. */
export function evolveSchedule(row: ScheduleRow | undefined, event: StoredEvent): ScheduleRow | undefined {
  switch (event.type) {
    case "WebhookCreated":
    case "WebhookUpdated":
      return scheduleAfterConfig(row, {
        walletId: event.walletId,
        config: event.data,
        at: event.recordedAt,
        created: event.type === "WebhookCreated",
      });
    case "WebhookDeleted":
      return undefined;
  }
  if (!row) return undefined;
  switch (event.type) {
    case "ScheduleFired": {
      const d = event.data;
      // The outcome comes with the delivery's attempt; until then the run has none.
      return {
        ...row,
        next_run_at: dateOrNull(d.nextRunAt),
        handled_through: later(row.handled_through, new Date(d.plannedAt)),
        last_run_at: new Date(d.executedAt),
        last_status: null,
        last_error: null,
        last_delivery_id: d.deliveryId,
      };
    }
    case "ScheduleRunFailed": {
      const d = event.data;
      return {
        ...row,
        next_run_at: dateOrNull(d.nextRunAt),
        handled_through: later(row.handled_through, new Date(d.plannedAt)),
        last_run_at: new Date(d.executedAt),
        last_status: "failure",
        last_error: d.error,
        last_delivery_id: null,
      };
    }
    case "ScheduleRunsSkipped": {
      const d = event.data;
      // No run happened, so lastRunAt stays; the status says the planned runs were missed. A late
      // attempt of an earlier run no longer speaks for the schedule.
      return {
        ...row,
        next_run_at: dateOrNull(d.nextRunAt),
        handled_through: later(row.handled_through, new Date(new Date(d.missedBefore).getTime() - 1)),
        last_status: "failure",
        last_error: d.error,
        last_delivery_id: null,
      };
    }
    case "DeliveryAttempted": {
      const d = event.data;
      if (d.kind !== "scheduled" || d.deliveryId !== row.last_delivery_id) return row;
      return {
        ...row,
        last_status: d.ok ? "success" : "failure",
        last_error: d.ok
          ? null
          : d.error ?? (d.status === undefined ? "delivery failed" : `HTTP ${d.status}`),
      };
    }
  }
  return row;
}

function webhookIdOf(event: StoredEvent): string | null {
  switch (event.type) {
    case "WebhookCreated":
    case "WebhookUpdated":
    case "WebhookDeleted":
    case "ScheduleFired":
    case "ScheduleRunFailed":
    case "ScheduleRunsSkipped":
      return event.data.webhookId;
    case "DeliveryAttempted":
      return event.data.kind === "scheduled" ? event.data.webhookId : null;
  }
  return null;
}

export const schedulesProjection = defineProjection<ScheduleRow>({
  table: "schedules",
  columns: COLUMNS,
  keyColumns: ["wallet_id", "webhook_id"],
  keyRow: (event) => touchedWebhookRow(event.walletId, webhookIdOf(event)),
  evolve: evolveSchedule,
  readsPrevious: true,
  // A deactivated wallet's webhooks are gone (CONTRACT section 3), and so are their runs.
  removedWithWallet: true,
});

/** Folds a wallet's events into its schedule rows, by webhook id (rebuilding rows the table lacks). */
export function foldSchedules(events: StoredEvent[]): Map<string, ScheduleRow> {
  const rows = new Map<string, ScheduleRow>();
  for (const event of events) {
    if (event.type === "WalletDeactivated" || event.type === "WalletErased") rows.clear();
    const webhookId = webhookIdOf(event);
    if (webhookId === null) continue;
    const next = evolveSchedule(rows.get(webhookId), event);
    if (next) rows.set(webhookId, next);
    else rows.delete(webhookId);
  }
  return rows;
}

/** Inserts a rebuilt row unless the table has one already. */
export async function insertScheduleIfMissing(tx: Queryable, row: ScheduleRow): Promise<void> {
  await tx`insert into schedules ${tx(row, ...COLUMNS)} on conflict (wallet_id, webhook_id) do nothing`;
}

/**
 * One schedule as a ledger read that locks its row for the rest of the transaction: a run's
 * transaction takes it before it ends its claim, the order in which a claim takes them too, so the
 * two never deadlock, and no instance claims the planned time meanwhile.
 */
export const lockedScheduleRead = rowRead<WebhookKey, ScheduleRow>(schedulesProjection, {
  name: "locked schedule",
  keyRow: webhookKeyRow,
  async load(sql, keys) {
    return await sql<ScheduleRow[]>`
      select s.* from unnest(${keys.map((k) => k.walletId)}::text[], ${
      keys.map((k) => k.webhookId)
    }::text[]) as x(w, h)
      cross join lateral (select * from schedules e where e.wallet_id = x.w and e.webhook_id = x.h for update) s`;
  },
});

/**
 * Wallets with a scheduled webhook that has no schedule row: webhooks scheduled before this model
 * existed. Their rows are rebuilt from the log, as a replay would build them.
 */
export async function walletsWithUnplannedSchedules(sql: Queryable, limit: number): Promise<string[]> {
  const rows = await sql<{ wallet_id: string }[]>`
    select distinct h.wallet_id from webhooks h join wallets w on w.wallet_id = h.wallet_id
    where h.schedule_cron is not null and w.deactivated_at is null
      and not exists (select 1 from schedules s where s.wallet_id = h.wallet_id and s.webhook_id = h.webhook_id)
    limit ${limit}`;
  return rows.map((row) => row.wallet_id);
}

/** All of a wallet's schedules by webhook id, as a ledger read. */
export const walletSchedulesRead = walletRowsRead(schedulesProjection, {
  name: "wallet schedules",
  async load(sql, walletIds) {
    return await sql<ScheduleRow[]>`select * from schedules where wallet_id = any(${walletIds})`;
  },
});

/** The `webhook-id` of a run: the same for every attempt at one planned time, so receivers can deduplicate. */
export function runMessageId(webhookId: string, plannedAt: Date): string {
  return `sch_${webhookId}_${Math.floor(plannedAt.getTime() / 1000)}`;
}
