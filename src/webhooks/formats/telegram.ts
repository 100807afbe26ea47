// The Telegram Bot API `sendMessage` body for an inbound email, in Telegram's HTML parse mode
// (CONTRACT section 7, notes/webhooks.md section 3.4).

import type { EmailPayload } from "../payloads.ts";
import { cutEscaped, escapeEntities, oneLine, senderLine } from "./text.ts";

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

// Telegram takes at most 4096 characters of text. Counting the escaped HTML in UTF-16 units is
// conservative: entities and tags count fully, and units are never fewer than characters.
const MAX_TEXT = 4_096;
// Caps on the header parts (after escaping), so a huge subject cannot crowd out the body.
const MAX_SUBJECT = 1_000;
const SENDER = { escape: escapeEntities, maxName: 256, maxEmail: 320 };

/** `<b>subject</b>\nFrom: name &lt;email&gt;\n\ntext`, HTML-escaped and cut to 4096 characters. */
export function telegramMessage(
  payload: EmailPayload,
  text: string,
  options: TelegramOptions,
): TelegramMessage {
  // The edge requires `chat_id` for `telegram` (CONTRACT section 6); reaching here without one is a bug.
  if (options.chat_id === undefined || options.chat_id === "") {
    throw new Error('Missing option "chat_id" for the telegram format');
  }
  const subject = cutEscaped(escapeEntities(oneLine(payload.subject) || "(no subject)"), MAX_SUBJECT);
  // Only the header holds tags, and it is never cut after they are added: no tag can be left broken.
  const header = `<b>${subject}</b>\nFrom: ${senderLine(payload.from, SENDER)}\n\n`;
  const budget = MAX_TEXT - header.length;
  return {
    chat_id: chatId(options.chat_id),
    // Escaping only lengthens text, so the first `budget + 1` units are enough to decide the cut.
    text: header + cutEscaped(escapeEntities(text.slice(0, budget + 1)), budget),
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
