// The Slack incoming-webhook body for a chat message (an inbound email, an alert): one mrkdwn
// `text` (CONTRACT section 7).

import type { ChatMessage } from "./chat_message.ts";
import { cutEscaped, escapeEntities, oneLine, senderLine } from "./text.ts";

/** The JSON body POSTed to a Slack incoming webhook. */
export interface SlackMessage {
  text: string;
}

// Slack truncates `text` beyond 40,000 characters; stay below with room for the ellipsis.
const MAX_TEXT = 39_000;
// Caps on the header parts, so a huge subject cannot crowd out the body (the subject's after escaping).
const MAX_SUBJECT = 1_000;
// The angle brackets around the address are escaped too (`&lt;ann@x.test&gt;`): Slack shows them as
// `<` and `>`, while a bare `<...>` would be read as a link or mention control sequence.
const SENDER = { escape: escapeEntities, maxName: 256, maxEmail: 320 };

/** `*<subject>*\nFrom: <name> <<email>>\n\n<text>` with every email-provided part escaped. */
export function slackMessage(message: ChatMessage): SlackMessage {
  const { text } = message;
  const subject = cutEscaped(escapeEntities(oneLine(message.subject) || "(no subject)"), MAX_SUBJECT);
  const header = `*${subject}*\nFrom: ${senderLine(message.from, SENDER)}\n\n`;
  const budget = MAX_TEXT - header.length;
  // Escaping only lengthens text, so the first `budget + 1` units are enough to decide the cut.
  return { text: header + cutEscaped(escapeEntities(text.slice(0, budget + 1)), budget) };
}
