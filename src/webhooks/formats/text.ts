// Text helpers the chat formats share: single header lines, the sender line, cuts that never split a
// character or an entity, and the three-character escaping of Slack mrkdwn and Telegram HTML.

import { codePointLength, cutChars, cutCodePoints, isHighSurrogate } from "../../text_bounds.ts";
import type { Address } from "../payloads.ts";

export const ELLIPSIS = "…";

/** Header lines must stay single lines, or a subject with a newline would break the markup around it. */
export function oneLine(value: string): string {
  return value.replace(/\s+/g, " ").trim();
}

export interface SenderLineOptions {
  /** The format's escaping, applied after the cut so that a cut never splits an escape. */
  escape?: (text: string) => string;
  /** Caps on the raw name and address, so a huge header cannot crowd out the body. */
  maxName: number;
  maxEmail: number;
}

/** `name <email>`, or whichever of the two there is, or `unknown`: one line, each part capped. */
export function senderLine(from: Address, options: SenderLineOptions): string {
  const escape = options.escape ?? ((text: string) => text);
  const name = cut(oneLine(from.name), options.maxName);
  const email = cut(oneLine(from.email), options.maxEmail);
  if (name !== "" && email !== "") return escape(`${name} <${email}>`);
  return escape(name || email || "unknown");
}

/** Cuts to `max` UTF-16 units including the marker, never between the halves of a surrogate pair. */
export function cut(value: string, max: number, marker = ELLIPSIS): string {
  if (value.length <= max) return value;
  return cutChars(value, max - marker.length).text + marker;
}

/** Cuts to `max` code points including the marker: what Telegram counts as characters. */
export function cutCodePointsMarked(value: string, max: number, marker = ELLIPSIS): string {
  if (!cutCodePoints(value, max).cut) return value;
  return cutCodePoints(value, max - codePointLength(marker)).text + marker;
}

/**
 * Escapes `&`, `<` and `>`: all that Slack mrkdwn and Telegram HTML need (without it `<!channel>`
 * in an email would ping a Slack channel).
 */
export function escapeEntities(value: string): string {
  return value.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/**
 * Cuts escaped text to `max` UTF-16 units including the ellipsis, never inside an entity such as
 * `&amp;` nor between the two halves of a surrogate pair.
 */
export function cutEscaped(value: string, max: number): string {
  if (value.length <= max) return value;
  let end = max - ELLIPSIS.length;
  if (isHighSurrogate(value.charCodeAt(end - 1))) end--;
  // Every `&` in escaped text starts an entity of at most 5 units (`&amp;`).
  const amp = value.lastIndexOf("&", end - 1);
  if (amp !== -1 && value.indexOf(";", amp) >= end) end = amp;
  return value.slice(0, end) + ELLIPSIS;
}
