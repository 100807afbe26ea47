// Turns an inbound email into the JSON body of a mailbox webhook, per the webhook's `format`
// (CONTRACT section 7). Pure: no clock, no network.

import { htmlToText } from "../../html_to_text.ts";
import type { EmailPayload, FormatSettings } from "../payloads.ts";
import { renderTemplate } from "./custom_template.ts";
import { discordMessage } from "./discord.ts";
import { pagerDutyEvent } from "./pagerduty.ts";
import { slackMessage } from "./slack.ts";
import { teamsMessage } from "./teams.ts";
import { telegramMessage } from "./telegram.ts";

/** Renders the body POSTed to a mailbox webhook; without a format, the payload as is. */
export function renderEmail(payload: EmailPayload, settings: FormatSettings): Record<string, unknown> {
  const format = settings.format ?? "";
  if (format === "") return { ...payload };
  if (format === "custom") return customBody(payload, settings.template);
  // The plain text is computed here, once, and handed to the format modules, so they do not import
  // this module back (no import cycle).
  const text = plainText(payload);
  const options = settings.options ?? {};
  switch (format) {
    case "slack":
      return { ...slackMessage(payload, text) };
    case "discord":
      return { ...discordMessage(payload, text) };
    case "teams":
      return { ...teamsMessage(payload, text) };
    case "telegram":
      return { ...telegramMessage(payload, text, options) };
    case "pagerduty":
      return { ...pagerDutyEvent(payload, text, options) };
  }
  throw new Error(`Unknown format "${format}"`);
}

/** The email's text part, or its HTML part stripped to text when the text part is empty. */
export function plainText(payload: EmailPayload): string {
  // A text part of only whitespace is what some mailers send beside a real HTML part.
  if (payload.text.trim() !== "" || payload.html.trim() === "") return payload.text;
  return htmlToText(payload.html, { forChat: true });
}

function customBody(payload: EmailPayload, template: Record<string, unknown> | undefined) {
  // The edge requires a template for `custom` (CONTRACT section 6); reaching here without one is a bug.
  if (template === undefined) throw new Error("Missing template for the custom format");
  return renderTemplate(template, { ...payload }) as Record<string, unknown>;
}
