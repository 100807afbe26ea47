// Counts Unicode code points (what the limits call characters) in place: spreading a string into
// an array costs memory in proportion to its length, and a large body used to exhaust it.

/** True when `text` has at most `max` code points; stops reading past the limit. */
export function hasAtMostCodePoints(text: string, max: number): boolean {
  // Every code point is one or two UTF-16 units, so the length alone often decides.
  if (text.length <= max) return true;
  if (text.length > 2 * max) return false;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is a single code point.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    if (++count > max) return false;
  }
  return true;
}
