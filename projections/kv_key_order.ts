// The order keys are listed in: Unicode code points, which is the byte order of their UTF-8 and so
// the order of the "C" collation the kv_entries.key column has. JavaScript's `<` compares UTF-16
// units instead, which puts U+E000..U+FFFF after the astral planes: the two must never be mixed.

const MAX_CODE_POINT = 0x10ffff;
const SURROGATES_START = 0xd800;
const SURROGATES_END = 0xdfff;

/** Negative, zero or positive as `a` sorts before, with or after `b` in code-point order. */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/**
 * The least string after every string that starts with `prefix`, the exclusive upper bound of a
 * range scan; undefined when there is none (an empty prefix, or one of only U+10FFFF).
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = [...prefix].map((c) => c.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last === MAX_CODE_POINT) continue;
    const next = last + 1 === SURROGATES_START ? SURROGATES_END + 1 : last + 1;
    return String.fromCodePoint(...points, next);
  }
  return undefined;
}
