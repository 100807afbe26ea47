// The webhook object of the API (CONTRACT section 6): one zod schema that both types the view and
// documents it in /openapi.json. A mailbox webhook or a scheduled one; credentials redacted; the
// signing key only in the answer to a create.
import { z } from "@hono/zod-openapi";
import { EMAIL_FORMATS } from "../payloads.ts";
import { redactHeaders, redactOptions } from "../redaction.ts";
import { nextRunAt } from "../../../projections/cron.ts";
import type { ScheduleRow } from "../../../projections/schedules.ts";
import { WebhookId } from "./input.ts";
import type { ScheduleSettings, WebhookConfig } from "./config.ts";
import type { Pause } from "../pause.ts";

const dateTime = (description: string) => z.string().nullable().openapi({ format: "date-time", description });

export const ScheduleView = z.strictObject({
  cron: z.string().openapi({ example: "30 2 * * *" }),
  timezone: z.string().openapi({ description: "IANA name", example: "Europe/Rome" }),
  active: z.boolean(),
  nextRunAt: dateTime("The next planned run; null while paused"),
  lastRunAt: dateTime("The last run; null before the first"),
  lastStatus: z.enum(["success", "failure"]).nullable(),
  lastError: z.string().nullable(),
}).openapi("WebhookSchedule");

const identity = {
  webhookId: WebhookId,
  webhook: z.string().openapi({ description: "The callback URL" }),
  headers: z.record(z.string(), z.string()).openapi({ description: 'Names only: values read as "***"' }),
  hash: z.string().openapi({ description: "SHA-256 of the wallet token" }),
  secret: z.string().optional().openapi({ description: "Only when created: the signing key, whsec_..." }),
};

const pauseFields = {
  pausedReason: z.string().optional()
    .openapi({
      description: 'Only while paused: "paused by owner", or "endpoint failing" when the service paused it',
    }),
  pausedAt: z.string().optional().openapi({ format: "date-time", description: "Only while paused" }),
};

export const MailboxWebhookView = z.strictObject({
  ...identity,
  email: z.string().openapi({ description: "The address receiving mail, kept for the webhook's life" }),
  format: z.enum(EMAIL_FORMATS).optional().openapi({ description: "None: the email payload as is" }),
  template: z.record(z.string(), z.unknown()).optional().openapi({ description: "Format custom only" }),
  options: z.record(z.string(), z.string())
    .openapi({ description: 'Sensitive values (names with key, token or secret) read as "***"' }),
  includeAttachments: z.boolean(),
  active: z.boolean().openapi({
    description: "false: paused; mail is still accepted and its deliveries wait",
  }),
  ...pauseFields,
}).openapi("MailboxWebhook");

export const ScheduledWebhookView = z.strictObject({
  ...identity,
  schedule: ScheduleView,
  ...pauseFields,
}).openapi("ScheduledWebhook");

export const WebhookView = z.union([MailboxWebhookView, ScheduledWebhookView]).openapi("Webhook");
export type WebhookView = z.infer<typeof WebhookView>;

export const WebhookList = z.strictObject({ webhooks: z.array(WebhookView) }).openapi("WebhookList");

export interface ViewOptions {
  /** The wallet hash, the same for all of a wallet's webhooks. */
  hash: string;
  now: Date;
  /** Only in the answer to a create. */
  includeSecret?: boolean;
  /** The webhook's row in the schedule model: its planned next run and last run. */
  schedule?: ScheduleRow;
  /** The webhook's pause, if it is paused. */
  pause?: Pause | null;
}

/** The webhook object of the API. */
export function webhookView(config: WebhookConfig, options: ViewOptions): WebhookView {
  const common = {
    webhookId: config.webhookId,
    webhook: config.url,
    headers: redactHeaders(config.headers),
    hash: options.hash,
  };
  const secret = options.includeSecret ? { secret: config.secret } : {};
  const pause = options.pause
    ? { pausedReason: options.pause.reason, pausedAt: options.pause.at.toISOString() }
    : undefined;
  if (config.mode === "scheduled") {
    const schedule = scheduleView(config.schedule, options.now, options.schedule);
    // A schedule the service turned off says why; one its owner turned off did not, and does not.
    return { ...common, schedule, ...(pause && !config.schedule.active ? pause : {}), ...secret };
  }
  const { format, template, options: formatOptions, includeAttachments } = config.mailbox;
  return {
    ...common,
    email: config.email,
    ...(format ? { format } : {}),
    ...(template ? { template } : {}),
    options: redactOptions(formatOptions),
    includeAttachments,
    active: pause === undefined,
    ...pause,
    ...secret,
  };
}

// The plan and the run history come from the schedule model; without its row (a webhook scheduled
// before that model existed, until the scheduler rebuilds the row) the next run is computed here.
function scheduleView(
  schedule: ScheduleSettings,
  now: Date,
  row?: ScheduleRow,
): z.infer<typeof ScheduleView> {
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
