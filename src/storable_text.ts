// What Postgres can store: text holds no U+0000, and jsonb refuses "\u0000" and unpaired surrogates
// ("\ud800"), which JSON.stringify writes for a lone surrogate. One such character in one call's
// event would fail the whole group-commit batch, so input is checked here at the edge, and the
// ledger checks every staged event again before it is written. Also: how an error phrase quotes
// what a client sent, bounded and escaped, so a phrase never carries raw input into the log.
import { cutCodePoints } from "./text_bounds.ts";

/** The rule phrase for a string that Postgres cannot store. */
export const UNSTORABLE_RULE = "must not contain U+0000 or unpaired surrogates";

/** True when Postgres can store `text` in a text or jsonb column unchanged. */
export function isStorable(text: string): boolean {
  return !text.includes("\u0000") && text.isWellFormed();
}

/**
 * The path of the first string (a value or an object key) in `value` that is not storable, or
 * undefined when every string is. Walks plain objects and arrays; binary data is skipped.
 */
export function findUnstorable(value: unknown, path = ""): string | undefined {
  if (typeof value === "string") return isStorable(value) ? undefined : path || "value";
  if (value === null || typeof value !== "object") return undefined;
  if (ArrayBuffer.isView(value) || value instanceof Date) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorable(value[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [name, member] of Object.entries(value)) {
    const where = path ? `${path}.${name}` : name;
    if (!isStorable(name)) return where;
    const found = findUnstorable(member, where);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The longest a quoted input runs in a phrase, in code points, before it is cut with "…". */
export const MAX_QUOTED_CHARS = 40;

/**
 * `text` as a phrase may quote it: in double quotes, control characters, quotes, backslashes and
 * unpaired surrogates escaped as in JSON, and cut to `maxChars` code points with "…".
 */
export function quoteInput(text: string, maxChars = MAX_QUOTED_CHARS): string {
  let kept = "";
  let points = 0;
  for (const char of text) {
    if (points === maxChars) return `"${kept}…"`;
    kept += escapeChar(char);
    points++;
  }
  return `"${kept}"`;
}

function escapeChar(char: string): string {
  const code = char.codePointAt(0)!;
  if (char === '"' || char === "\\") return `\\${char}`;
  if (code < 0x20 || code === 0x7f || (code >= 0xd800 && code <= 0xdfff)) {
    return `\\u${code.toString(16).padStart(4, "0")}`;
  }
  return char;
}

/** The longest error text one event keeps, in code points. */
export const MAX_ERROR_CHARS = 300;

/**
 * An error text as an event may keep it: storable (U+0000 and unpaired surrogates become U+FFFD)
 * and at most MAX_ERROR_CHARS code points, cut with "…".
 */
export function boundedErrorText(text: string, maxChars = MAX_ERROR_CHARS): string {
  const safe = isStorable(text) ? text : text.toWellFormed().replaceAll("\u0000", "\ufffd");
  const kept = cutCodePoints(safe, maxChars);
  return kept.cut ? `${cutCodePoints(safe, maxChars - 1).text}…` : safe;
}
