// The Telegram Bot API `sendMessage` body for a chat message (an inbound email, an alert), in
// Telegram's HTML parse mode (CONTRACT section 7, notes/webhooks.md section 3.4).

import { codePointLength } from "../../text_bounds.ts";
import { cutCodePointsMarked, escapeEntities, oneLine, senderLine } from "./text.ts";
import type { ChatMessage } from "./chat_message.ts";

/** The JSON body POSTed to Telegram's `sendMessage`. */
export interface TelegramMessage {
  chat_id: number | string;
  text: string;
  parse_mode: "HTML";
  link_preview_options: { is_disabled: true };
}

/** The webhook options Telegram reads: `chat_id` (required). */
export interface TelegramOptions {
  chat_id?: string;
}

// Telegram takes at most 4096 characters of text, counted after entity parsing: the text shown, in
// code points (tdlib compares utf8_length of the parsed text with message_text_length_max). Tags and
// escapes do not count, so the cuts are made on the raw text, and escaping comes after.
const MAX_TEXT = 4_096;
// Caps on the header parts (characters shown), so a huge subject cannot crowd out the body.
const MAX_SUBJECT = 1_000;
const SENDER = { maxName: 256, maxEmail: 320 };

/** `<b>subject</b>\nFrom: name &lt;email&gt;\n\ntext`, HTML-escaped, 4096 characters shown at most. */
export function telegramMessage(message: ChatMessage, options: TelegramOptions): TelegramMessage {
  // The edge requires `chat_id` for `telegram` (CONTRACT section 6); reaching here without one is a bug.
  if (options.chat_id === undefined || options.chat_id === "") {
    throw new Error('Missing option "chat_id" for the telegram format');
  }
  const subject = cutCodePointsMarked(oneLine(message.subject) || "(no subject)", MAX_SUBJECT);
  const from = senderLine(message.from, SENDER);
  const shownHeader = `${subject}\nFrom: ${from}\n\n`;
  const body = cutCodePointsMarked(message.text, MAX_TEXT - codePointLength(shownHeader));
  return {
    chat_id: chatId(options.chat_id),
    // Every cut is made before escaping, so no entity is split; the only tag is the header's bold.
    text: `<b>${escapeEntities(subject)}</b>\nFrom: ${escapeEntities(from)}\n\n${escapeEntities(body)}`,
    parse_mode: "HTML",
    link_preview_options: { is_disabled: true },
  };
}

// Telegram wants numeric chat ids as integers (`-1001234567890`) and channel names as strings.
function chatId(value: string): number | string {
  if (!/^-?\d+$/.test(value)) return value;
  const id = Number(value);
  // An id beyond 2^53 would be changed by the conversion; the string is then the safer form.
  return Number.isSafeInteger(id) ? id : value;
}
