// The rules a webhook's settings keep as a whole, past the schema of each field (CONTRACT sections 6
// and 10): a safe URL, what a format needs, a schedule that means something. Pure: the time to plan
// from and whether private targets are allowed are handed in.
import { checkWebhookUrl } from "../url_safety.ts";
import { validateSchedule } from "../../../projections/cron.ts";
import type { Parsed } from "../../parsed.ts";
import { mailboxProblem } from "./mailbox_rules.ts";
import type { MailboxSettings, WebhookSettings } from "./config.ts";

export interface SettingsRules {
  /** UNSAFE_ALLOW_PRIVATE_WEBHOOKS: local testing only. */
  allowPrivate: boolean;
  /** A schedule must fire at least once after this. */
  now: Date;
}

/** The settings when they keep every rule, else the 400 phrase of the first they break. */
export function validateSettings(settings: WebhookSettings, rules: SettingsRules): Parsed<WebhookSettings> {
  const problem = checkWebhookUrl(settings.url, { allowPrivate: rules.allowPrivate }) ??
    (settings.mode === "scheduled"
      ? validateSchedule(settings.schedule.cron, settings.schedule.timezone, rules.now)
      : checkMailbox(settings.mailbox));
  return problem === null ? { ok: true, value: settings } : { ok: false, phrase: problem };
}

/** What a format needs: its template, its options. Shared with low-balance alert webhooks. */
export function checkMailbox(mailbox: MailboxSettings): string | null {
  return mailboxProblem(mailbox);
}
