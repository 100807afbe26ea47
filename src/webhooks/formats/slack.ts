// The Slack incoming-webhook body for an inbound email: one mrkdwn `text` (CONTRACT section 7).

import type { Address, EmailPayload } from "../payloads.ts";

/** The JSON body POSTed to a Slack incoming webhook. */
export interface SlackMessage {
  text: string;
}

// Slack truncates `text` beyond 40,000 characters; stay below with room for the ellipsis.
const MAX_TEXT = 39_000;
// Caps on the header parts (after escaping), so a huge subject cannot crowd out the body.
const MAX_SUBJECT = 1_000;
const MAX_NAME = 256;
const MAX_EMAIL = 320;
const ELLIPSIS = "…";

/** `*<subject>*\nFrom: <name> <<email>>\n\n<text>` with every email-provided part escaped. */
export function slackMessage(payload: EmailPayload, text: string): SlackMessage {
  const subject = cutEscaped(escapeMrkdwn(oneLine(payload.subject) || "(no subject)"), MAX_SUBJECT);
  const header = `*${subject}*\nFrom: ${sender(payload.from)}\n\n`;
  const budget = MAX_TEXT - header.length;
  // Escaping only lengthens text, so the first `budget + 1` units are enough to decide the cut.
  return { text: header + cutEscaped(escapeMrkdwn(text.slice(0, budget + 1)), budget) };
}

// The angle brackets around the address are escaped too (`&lt;ann@x.test&gt;`): Slack shows them as
// `<` and `>`, while a bare `<...>` would be read as a link or mention control sequence.
function sender(from: Address): string {
  const name = cutEscaped(escapeMrkdwn(oneLine(from.name)), MAX_NAME);
  const email = cutEscaped(escapeMrkdwn(oneLine(from.email)), MAX_EMAIL);
  if (name !== "" && email !== "") return `${name} &lt;${email}&gt;`;
  return name || email || "unknown";
}

// Slack mrkdwn needs exactly these three escaped; without it `<!channel>` in an email would ping.
function escapeMrkdwn(value: string): string {
  return value.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

// Header lines must stay single lines, or a subject with a newline would break the bold markup.
function oneLine(value: string): string {
  return value.replace(/\s+/g, " ").trim();
}

// Cuts escaped text to `max` UTF-16 units including the ellipsis, never inside an entity such as
// `&amp;` nor between the two halves of a surrogate pair.
function cutEscaped(value: string, max: number): string {
  if (value.length <= max) return value;
  let end = max - ELLIPSIS.length;
  if (isHighSurrogate(value.charCodeAt(end - 1))) end--;
  // Every `&` in escaped text starts an entity of at most 5 units (`&amp;`).
  const amp = value.lastIndexOf("&", end - 1);
  if (amp !== -1 && value.indexOf(";", amp) >= end) end = amp;
  return value.slice(0, end) + ELLIPSIS;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
