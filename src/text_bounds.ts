// Cuts that bound a string without breaking a character: by UTF-8 bytes (what a column or a payload
// holds), by UTF-16 units (what JavaScript and most JSON limits count) and by code points (what
// Telegram counts). Each answers the kept text and whether anything was cut.

export interface Bounded {
  text: string;
  cut: boolean;
}

export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

export function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** At most `maxBytes` of UTF-8, cut between characters. */
export function cutUtf8(text: string, maxBytes: number): Bounded {
  if (text.length * 3 <= maxBytes) return { text, cut: false };
  // encodeInto stops before a character that does not fit, so `read` is a safe cut point.
  const { read } = new TextEncoder().encodeInto(text, new Uint8Array(maxBytes));
  return read < text.length ? { text: text.slice(0, read), cut: true } : { text, cut: false };
}

/** At most `maxChars` UTF-16 units, never splitting a surrogate pair. */
export function cutChars(text: string, maxChars: number): Bounded {
  if (text.length <= maxChars) return { text, cut: false };
  let end = maxChars;
  if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
  return { text: text.slice(0, end), cut: true };
}

/** At most `maxPoints` code points; reads no further than the cut, so a huge text costs little. */
export function cutCodePoints(text: string, maxPoints: number): Bounded {
  // Code points never outnumber UTF-16 units.
  if (text.length <= maxPoints) return { text, cut: false };
  let points = 0;
  let end = 0;
  for (const char of text) {
    if (points === maxPoints) return { text: text.slice(0, end), cut: true };
    points++;
    end += char.length;
  }
  return { text, cut: false };
}

/** The number of code points in `text`. */
export function codePointLength(text: string): number {
  let points = 0;
  for (const _ of text) points++;
  return points;
}
