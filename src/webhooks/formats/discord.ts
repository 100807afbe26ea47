// The Discord webhook body for a chat message (an inbound email, an alert): one markdown
// `content` (CONTRACT section 7).

import type { ChatMessage } from "./chat_message.ts";
import { cut, oneLine, senderLine } from "./text.ts";

/** The JSON body POSTed to a Discord webhook. */
export interface DiscordMessage {
  content: string;
  allowed_mentions: { parse: string[] };
}

// Discord rejects `content` over 2000 characters. Counting UTF-16 units is conservative: it is never
// less than the number of code points Discord counts.
const MAX_CONTENT = 2_000;
// Caps on the raw header parts (escaping may double them), so a huge subject cannot crowd out the body.
const MAX_SUBJECT = 200;
const SENDER = { escape: escapeMarkdown, maxName: 80, maxEmail: 254 };

/** `**<subject>**\nFrom: <name> <<email>>\n\n<text>` with mentions switched off. */
export function discordMessage(message: ChatMessage): DiscordMessage {
  const subject = escapeMarkdown(cut(oneLine(message.subject) || "(no subject)", MAX_SUBJECT));
  const header = `**${subject}**\nFrom: ${senderLine(message.from, SENDER)}\n\n`;
  return {
    content: header + cut(message.text, MAX_CONTENT - header.length),
    // `parse: []` makes `@everyone`, `@here` and role or user mentions in an email inert text.
    allowed_mentions: { parse: [] },
  };
}

// Only the header parts are escaped: they sit inside `**...**`, which a stray `*` or `_` would break.
// The body keeps its own markdown, as mail text often reads well that way. Escaping happens after
// cutting, so a cut can never leave a lone backslash in front of the closing `**`.
function escapeMarkdown(value: string): string {
  return value.replace(/[\\*_~`|]/g, "\\$&");
}
