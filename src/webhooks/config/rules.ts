// The rules a webhook's settings keep as a whole, past the schema of each field (CONTRACT sections 6
// and 10): a safe URL, what a format needs, a schedule that means something. Pure: the time to plan
// from and whether private targets are allowed are handed in.
import { PAGERDUTY_SEVERITIES } from "../formats/pagerduty.ts";
import { validateTemplate } from "../formats/custom_template.ts";
import { checkWebhookUrl } from "../url_safety.ts";
import { validateSchedule } from "../../schedules/cron.ts";
import type { Parsed } from "../../calls/parsed.ts";
import { quoteInput } from "../../storable_text.ts";
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
  const { format, template, options } = mailbox;
  if (format === "custom") {
    if (template === undefined) return 'Invalid template: required for format "custom"';
    const problem = validateTemplate(template);
    if (problem) return problem;
  } else if (template !== undefined) {
    return 'Invalid template: only allowed with format "custom"';
  }
  if (format === "telegram" && !options.chat_id) {
    return 'Invalid options.chat_id: required for format "telegram"';
  }
  if (format === "pagerduty") {
    if (!options.routing_key) return 'Invalid options.routing_key: required for format "pagerduty"';
    const severity = options.severity;
    if (severity !== undefined && !(PAGERDUTY_SEVERITIES as readonly string[]).includes(severity)) {
      return `Invalid options.severity ${quoteInput(severity)}: must be one of ${
        PAGERDUTY_SEVERITIES.join(", ")
      }`;
    }
  }
  return null;
}
