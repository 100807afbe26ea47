// A webhook's configuration from requests (CONTRACT section 6), pure transforms: the settings a
// create, replace or patch asks for, and the configuration a change leaves. The shape itself is
// declared beside the read model that keeps it (projections/webhook_config.ts); rows
// (projections/webhooks.ts) and event payloads (projections/webhook_config_data.ts) are converted
// in one place each.
import type {
  MailboxSettings,
  WebhookConfig,
  WebhookIdentity,
  WebhookSettings,
} from "../../../projections/webhook_config.ts";
import { mailboxFieldIn, type PatchWebhookInput, type ReplaceWebhookInput } from "./input.ts";
import type { Parsed } from "../../parsed.ts";

/** Values drawn before a change (random, so not in the decision): used only when needed. */
export interface FreshIdentity {
  /** `r_<random>@MAIL_DOMAIN`, for a webhook that becomes a mailbox without an address. */
  mailboxAddress: string;
  secret: string;
}

export type {
  MailboxSettings,
  MailboxWebhook,
  ScheduleSettings,
  WebhookConfig,
  WebhookIdentity,
  WebhookSettings,
} from "../../../projections/webhook_config.ts";

const notWithSchedule = (field: string) => `Invalid ${field}: not allowed with schedule`;

/** The settings of a create or replace body; refused when mailbox fields come with a schedule. */
export function settingsFromInput(input: ReplaceWebhookInput): Parsed<WebhookSettings> {
  const target = { url: input.url, headers: input.headers ?? {} };
  if (input.schedule) {
    const field = mailboxFieldIn(input);
    if (field) return { ok: false, phrase: notWithSchedule(field) };
    const { cron, timezone, active = true } = input.schedule;
    return { ok: true, value: { ...target, mode: "scheduled", schedule: { cron, timezone, active } } };
  }
  const mailbox: MailboxSettings = {
    ...(input.format ? { format: input.format } : {}),
    ...(input.template !== undefined ? { template: input.template as Record<string, unknown> } : {}),
    options: input.options ?? {},
    includeAttachments: input.includeAttachments ?? true,
  };
  return { ok: true, value: { ...target, mode: "mailbox", mailbox } };
}

/** A new webhook. A scheduled one gets its mailbox address when it becomes a mailbox webhook. */
export function newWebhookConfig(
  webhookId: string,
  settings: WebhookSettings,
  options: { createdAt: Date; fresh: FreshIdentity },
): WebhookConfig {
  const { createdAt, fresh } = options;
  return withIdentity(settings, { webhookId, secret: fresh.secret, createdAt }, {
    fresh: fresh.mailboxAddress,
  });
}

/** `current` with new settings: the same identity, signing key and mailbox address. */
export function replacedWebhookConfig(
  current: WebhookConfig,
  settings: WebhookSettings,
  fresh: FreshIdentity,
): WebhookConfig {
  const { webhookId, secret, createdAt } = current;
  return withIdentity(settings, { webhookId, secret, createdAt }, {
    kept: current.email,
    fresh: fresh.mailboxAddress,
  });
}

function withIdentity(
  settings: WebhookSettings,
  identity: WebhookIdentity,
  address: { kept?: string; fresh: string },
): WebhookConfig {
  const target = { url: settings.url, headers: settings.headers };
  if (settings.mode === "mailbox") {
    const email = address.kept ?? address.fresh;
    return { ...identity, ...target, mode: "mailbox", mailbox: settings.mailbox, email };
  }
  const email = address.kept === undefined ? {} : { email: address.kept };
  return { ...identity, ...target, mode: "scheduled", schedule: settings.schedule, ...email };
}

const DEFAULT_MAILBOX: MailboxSettings = { options: {}, includeAttachments: true };

/**
 * The settings a PATCH leaves: maps replace whole, `schedule` merges field by field, `schedule: null`
 * makes a mailbox webhook again (with default mailbox settings when it was scheduled). Turning a
 * mailbox webhook into a scheduled one drops its mailbox settings, as a scheduled webhook has none.
 * Refused when the result would mix the modes or lacks a schedule field.
 */
export function patchedSettings(current: WebhookConfig, patch: PatchWebhookInput): Parsed<WebhookSettings> {
  const target = { url: patch.url ?? current.url, headers: patch.headers ?? current.headers };
  const becomesScheduled = patch.schedule === undefined
    ? current.mode === "scheduled"
    : patch.schedule !== null;
  if (becomesScheduled) {
    const field = mailboxFieldIn(patch);
    if (field) return { ok: false, phrase: notWithSchedule(field) };
    const previous = current.mode === "scheduled" ? current.schedule : {};
    const merged = { ...previous, ...definedFields(patch.schedule ?? {}) };
    if (merged.cron === undefined) return { ok: false, phrase: "Invalid schedule.cron: required" };
    if (merged.timezone === undefined) return { ok: false, phrase: "Invalid schedule.timezone: required" };
    const schedule = { cron: merged.cron, timezone: merged.timezone, active: merged.active ?? true };
    return { ok: true, value: { ...target, mode: "scheduled", schedule } };
  }
  return { ok: true, value: { ...target, mode: "mailbox", mailbox: patchedMailbox(current, patch) } };
}

function patchedMailbox(current: WebhookConfig, patch: PatchWebhookInput): MailboxSettings {
  const base = current.mode === "mailbox" ? current.mailbox : DEFAULT_MAILBOX;
  const format = patch.format === undefined ? base.format : patch.format || undefined;
  // Leaving "custom" without saying what becomes of the template drops it: only custom has one.
  const template = patch.template === undefined
    ? (format === "custom" ? base.template : undefined)
    : patch.template === null
    ? undefined
    : patch.template as Record<string, unknown>;
  return {
    ...(format ? { format } : {}),
    ...(template !== undefined ? { template } : {}),
    options: patch.options === undefined ? base.options : patch.options ?? {},
    includeAttachments: patch.includeAttachments ?? base.includeAttachments,
  };
}

function definedFields<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
