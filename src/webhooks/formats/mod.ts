// Turns an inbound email into the JSON body of a mailbox webhook, per the webhook's `format`
// (CONTRACT section 7), and renders any chat message (an alert too) in a chat format. Pure: no
// clock, no network.

import { htmlToText } from "../../html_to_text.ts";
import type { EmailFormat, EmailPayload, FormatSettings } from "../payloads.ts";
import type { ChatMessage } from "./chat_message.ts";
import { renderTemplate } from "./custom_template.ts";
import { discordMessage } from "./discord.ts";
import { pagerDutyEvent } from "./pagerduty.ts";
import { slackMessage } from "./slack.ts";
import { teamsMessage } from "./teams.ts";
import { telegramMessage } from "./telegram.ts";

export type { ChatMessage } from "./chat_message.ts";

/** The formats a chat message renders in: all but `custom`, whose template reads the raw payload. */
export type ChatFormat = Exclude<EmailFormat, "custom">;

/** Renders the body POSTed to a mailbox webhook; without a format, the payload as is. */
export function renderEmail(payload: EmailPayload, settings: FormatSettings): Record<string, unknown> {
  const format = settings.format ?? "";
  if (format === "") return { ...payload };
  if (format === "custom") return customBody(payload, settings.template);
  return renderChat(chatMessageOf(payload), format, settings.options ?? {});
}

/** A chat message's body in one of the chat formats. */
export function renderChat(
  message: ChatMessage,
  format: ChatFormat,
  options: Record<string, string>,
): Record<string, unknown> {
  switch (format) {
    case "slack":
      return { ...slackMessage(message) };
    case "discord":
      return { ...discordMessage(message) };
    case "teams":
      return { ...teamsMessage(message) };
    case "telegram":
      return { ...telegramMessage(message, options) };
    case "pagerduty":
      return { ...pagerDutyEvent(message, options) };
  }
  throw new Error(`Unknown format "${format}"`);
}

/** An email as the chat formats show it: its sender, subject and plain text, and its attachments. */
function chatMessageOf(payload: EmailPayload): ChatMessage {
  return {
    id: payload.externalMessageId,
    at: payload.receivedAt,
    from: payload.from,
    subject: payload.subject,
    text: plainText(payload),
    attachments: payload.attachments,
  };
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
