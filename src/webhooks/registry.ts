// Pure decisions of the webhook registry: the configuration a create, replace or patch leaves, and
// the webhook object the API answers with (CONTRACT section 6). No database, clock or randomness:
// the caller hands in the current row, the time and fresh values.
import type { WebhookConfigData, WebhookRow } from "../../projections/webhooks.ts";
import { mailboxFieldIn, type PatchWebhookInput, type WebhookSettings } from "./config_schema.ts";
import type { EmailFormat } from "./payloads.ts";
import { nextRunAt } from "../schedules/cron.ts";
import type { ScheduleRow } from "../../projections/schedules.ts";
import { redactHeaders, redactOptions } from "./redaction.ts";

/** Fresh values a change may need: a mailbox address and a signing secret. */
export interface Fresh {
  mailboxAddress(): string;
  secret(): string;
}

/** The configuration of a new webhook. A scheduled webhook gets its mailbox address when it becomes one. */
export function newWebhookConfig(
  webhookId: string,
  settings: WebhookSettings,
  createdAt: Date,
  fresh: Fresh,
): WebhookConfigData {
  return configOf(webhookId, settings, {
    email: settings.mailbox ? fresh.mailboxAddress() : undefined,
    secret: fresh.secret(),
    createdAt: createdAt.toISOString(),
  });
}

/** The configuration after replacing `row`'s settings: same identity, secret and mailbox address. */
export function replacedWebhookConfig(
  row: WebhookRow,
  settings: WebhookSettings,
  fresh: Fresh,
): WebhookConfigData {
  return configOf(row.webhook_id, settings, {
    email: row.email ?? (settings.mailbox ? fresh.mailboxAddress() : undefined),
    secret: row.secret,
    createdAt: row.created_at.toISOString(),
  });
}

function configOf(
  webhookId: string,
  settings: WebhookSettings,
  identity: { email?: string; secret: string; createdAt: string },
): WebhookConfigData {
  const { mailbox, schedule } = settings;
  return {
    webhookId,
    url: settings.url,
    headers: settings.headers,
    ...(mailbox
      ? {
        ...(mailbox.format ? { format: mailbox.format } : {}),
        ...(mailbox.template !== undefined ? { template: mailbox.template } : {}),
        options: mailbox.options,
        includeAttachments: mailbox.includeAttachments,
      }
      : {}),
    ...(schedule ? { schedule } : {}),
    ...(identity.email ? { email: identity.email } : {}),
    secret: identity.secret,
    createdAt: identity.createdAt,
  };
}

/** The settings a row holds now. */
export function settingsOf(row: WebhookRow): WebhookSettings {
  if (row.schedule_cron !== null) {
    return {
      url: row.url,
      headers: row.headers,
      schedule: {
        cron: row.schedule_cron,
        timezone: row.schedule_timezone!,
        active: row.schedule_active ?? true,
      },
    };
  }
  return {
    url: row.url,
    headers: row.headers,
    mailbox: {
      ...(row.format ? { format: row.format as EmailFormat } : {}),
      ...(row.template ? { template: row.template } : {}),
      options: row.options,
      includeAttachments: row.include_attachments,
    },
  };
}

const DEFAULT_MAILBOX: NonNullable<WebhookSettings["mailbox"]> = { options: {}, includeAttachments: true };

/**
 * Applies a PATCH: maps replace whole, `schedule` merges field by field, `schedule: null` makes a
 * mailbox webhook again (with default mailbox settings when it was scheduled). Turning a mailbox
 * webhook into a scheduled one drops its mailbox settings, as a scheduled webhook has none.
 * Returns the 400 phrase when the result would mix the modes or lacks a schedule field.
 */
export function patchedSettings(row: WebhookRow, patch: PatchWebhookInput): WebhookSettings | string {
  const current = settingsOf(row);
  const url = patch.url ?? current.url;
  const headers = patch.headers ?? current.headers;
  const mailboxField = mailboxFieldIn(patch);

  const becomesScheduled = patch.schedule === undefined
    ? current.schedule !== undefined
    : patch.schedule !== null;
  if (becomesScheduled) {
    if (mailboxField) return `Invalid ${mailboxField}: not allowed with schedule`;
    const merged = { ...current.schedule, ...definedFields(patch.schedule ?? {}) };
    if (merged.cron === undefined) return "Invalid schedule.cron: required";
    if (merged.timezone === undefined) return "Invalid schedule.timezone: required";
    return {
      url,
      headers,
      schedule: { cron: merged.cron, timezone: merged.timezone, active: merged.active ?? true },
    };
  }

  const base = current.mailbox ?? DEFAULT_MAILBOX;
  const format = patch.format === undefined ? base.format : patch.format || undefined;
  // Leaving "custom" without saying what becomes of the template drops it: only custom has one.
  const template = patch.template === undefined
    ? (format === "custom" ? base.template : undefined)
    : patch.template === null
    ? undefined
    : patch.template as Record<string, unknown>;
  return {
    url,
    headers,
    mailbox: {
      ...(format ? { format } : {}),
      ...(template !== undefined ? { template } : {}),
      options: patch.options === undefined ? base.options : patch.options ?? {},
      includeAttachments: patch.includeAttachments ?? base.includeAttachments,
    },
  };
}

function definedFields<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export interface ViewOptions {
  /** The wallet hash, the same for all of a wallet's webhooks. */
  hash: string;
  now: Date;
  /** Only in the answer to a create. */
  includeSecret?: boolean;
  /** The webhook's row in the schedule model: its planned next run and last run. */
  schedule?: ScheduleRow;
}

/** The webhook object of the API: redacted headers and options, mode-specific fields. */
export function webhookView(row: WebhookRow, options: ViewOptions): Record<string, unknown> {
  const view: Record<string, unknown> = {
    webhookId: row.webhook_id,
    webhook: row.url,
    headers: redactHeaders(row.headers),
    hash: options.hash,
  };
  const settings = settingsOf(row);
  if (settings.schedule) {
    view.schedule = scheduleView(settings.schedule, options.now, options.schedule);
  } else {
    const mailbox = settings.mailbox!;
    view.email = row.email;
    if (mailbox.format) view.format = mailbox.format;
    if (mailbox.template) view.template = mailbox.template;
    view.options = redactOptions(mailbox.options);
    view.includeAttachments = mailbox.includeAttachments;
  }
  if (options.includeSecret) view.secret = row.secret;
  return view;
}

// The plan and the run history come from the schedule model; without its row (a webhook scheduled
// before that model existed, until the scheduler rebuilds the row) the next run is computed here.
function scheduleView(schedule: NonNullable<WebhookSettings["schedule"]>, now: Date, row?: ScheduleRow) {
  const next = row
    ? row.next_run_at
    : schedule.active
    ? nextRunAt(schedule.cron, schedule.timezone, now)
    : null;
  return {
    cron: schedule.cron,
    timezone: schedule.timezone,
    active: schedule.active,
    nextRunAt: schedule.active ? next?.toISOString() ?? null : null,
    lastRunAt: row?.last_run_at?.toISOString() ?? null,
    lastStatus: row?.last_status ?? null,
    lastError: row?.last_error ?? null,
  };
}
