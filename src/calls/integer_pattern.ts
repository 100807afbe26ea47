// Integer ranges as regular expressions. Query parameters are strings, so a bound such as "1 to 100"
// can only reach the OpenAPI document (and the clients generated from it) as a pattern; the same
// pattern is then the server's rule, so the two cannot drift apart.
import { z } from "@hono/zod-openapi";

/** One character class of digits, `[a-b]`, or the digit itself. */
function digits(from: number, to: number): string {
  return from === to ? String(from) : `[${from}-${to}]`;
}

function group(alternatives: string): string {
  return alternatives.includes("|") ? `(?:${alternatives})` : alternatives;
}

/** Alternatives matching every number from `low` to `high`, two digit strings of one length. */
function sameLength(low: string, high: string): string {
  if (low === high) return low;
  if (low.length === 1) return digits(Number(low), Number(high));
  const rest = low.length - 1;
  const [lowRest, highRest] = [low.slice(1), high.slice(1)];
  if (low[0] === high[0]) return low[0] + group(sameLength(lowRest, highRest));
  const parts: string[] = [];
  let first = Number(low[0]);
  let last = Number(high[0]);
  if (lowRest !== "0".repeat(rest)) {
    parts.push(low[0] + group(sameLength(lowRest, "9".repeat(rest))));
    first++;
  }
  let tail: string | undefined;
  if (highRest !== "9".repeat(rest)) {
    tail = high[0] + group(sameLength("0".repeat(rest), highRest));
    last--;
  }
  if (first <= last) parts.push(`${digits(first, last)}[0-9]{${rest}}`);
  if (tail) parts.push(tail);
  return parts.join("|");
}

/** Alternatives matching the decimal numbers from `low` to `high` (0 <= low <= high), no leading zero. */
function rangeAlternatives(low: bigint, high: bigint): string {
  const parts: string[] = [];
  for (let start = low; start <= high;) {
    const length = String(start).length;
    const top = high < 10n ** BigInt(length) - 1n ? high : 10n ** BigInt(length) - 1n;
    parts.push(sameLength(String(start), String(top)));
    start = top + 1n;
  }
  return parts.join("|");
}

export interface IntegerPatternOptions {
  /** Whether `007` may stand for 7 (default true: the server reads the number, not the digits). */
  leadingZeros?: boolean;
  /** Whether `-n` is allowed for every n in the range too (a range symmetric around 0). */
  signed?: boolean;
}

/** A pattern matching exactly the decimal integers from `min` to `max` (0 <= min <= max). */
export function integerPattern(min: number, max: number, options: IntegerPatternOptions = {}): RegExp {
  if (!(Number.isSafeInteger(min) && Number.isSafeInteger(max) && 0 <= min && min <= max)) {
    throw new Error(`Invalid integer range ${min} to ${max}`);
  }
  const sign = options.signed ? "-?" : "";
  const zeros = options.leadingZeros === false ? "" : "0*";
  return new RegExp(`^${sign}${zeros}(?:${rangeAlternatives(BigInt(min), BigInt(max))})$`);
}

/**
 * A query parameter holding an integer from `min` to `max` (the range of `-max` to `max` when
 * signed): its pattern is both the validation and what the document shows. Absent is allowed.
 */
export function integerParam(min: number, max: number, options: IntegerPatternOptions = {}) {
  const rule = options.signed
    ? `must be an integer from -${max} to ${max}`
    : `must be an integer from ${min} to ${max}`;
  return z.string().regex(integerPattern(min, max, options), rule).optional();
}
