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

/** A step of a path into a JSON value: an object member's name or an array index. */
export type PathStep = string | number;

interface Visit {
  value: unknown;
  step?: PathStep;
  parent?: Visit;
}

function stepsTo(visit: Visit): PathStep[] {
  const steps: PathStep[] = [];
  for (let at: Visit | undefined = visit; at?.step !== undefined; at = at.parent) steps.push(at.step);
  return steps.reverse();
}

/** Shallower than this, allStorable recurses; deeper, the walk below takes over (no stack to exhaust). */
const RECURSION_LIMIT = 32;

/** True when every string in `value`, object keys included, is storable: no allocation on the way. */
function allStorable(value: unknown, depth: number): boolean {
  if (typeof value === "string") return isStorable(value);
  if (value === null || typeof value !== "object") return true;
  if (ArrayBuffer.isView(value) || value instanceof Date) return true;
  if (depth === RECURSION_LIMIT) return unstorablePathWalk(value) === undefined;
  if (Array.isArray(value)) {
    for (const member of value) if (!allStorable(member, depth + 1)) return false;
    return true;
  }
  for (const name in value) {
    if (!isStorable(name) || !allStorable((value as Record<string, unknown>)[name], depth + 1)) return false;
  }
  return true;
}

/**
 * The steps to the first string (a value or an object key, in document order) in `value` that is
 * not storable: `[]` when `value` is that string, undefined when every string is storable. Walks
 * plain objects and arrays without recursion, so no nesting depth can exhaust the stack (a 256 KiB
 * JSON body nests 100,000 deep); binary data and dates are skipped.
 */
export function unstorablePath(value: unknown): PathStep[] | undefined {
  // Nearly every value is storable: that answer costs no allocation; only a refusal walks for its path.
  return allStorable(value, 0) ? undefined : unstorablePathWalk(value);
}

function unstorablePathWalk(value: unknown): PathStep[] | undefined {
  const pending: Visit[] = [{ value }];
  while (pending.length > 0) {
    const visit = pending.pop()!;
    if (typeof visit.step === "string" && !isStorable(visit.step)) return stepsTo(visit);
    const current = visit.value;
    if (typeof current === "string") {
      if (!isStorable(current)) return stepsTo(visit);
      continue;
    }
    if (current === null || typeof current !== "object") continue;
    if (ArrayBuffer.isView(current) || current instanceof Date) continue;
    const members: [PathStep, unknown][] = Array.isArray(current)
      ? current.map((member, index) => [index, member])
      : Object.entries(current);
    // Last pushed, first visited: the members in their own order.
    for (let i = members.length - 1; i >= 0; i--) {
      pending.push({ value: members[i][1], step: members[i][0], parent: visit });
    }
  }
  return undefined;
}

/**
 * The path of the first string (a value or an object key) in `value` that is not storable, or
 * undefined when every string is: `a.b[0]`, a name that is itself unstorable quoted as quoteInput
 * quotes it, so the path can always be stored and shown. Walks plain objects and arrays; binary
 * data is skipped.
 */
export function findUnstorable(value: unknown, path = ""): string | undefined {
  const steps = unstorablePath(value);
  if (steps === undefined) return undefined;
  let where = path;
  for (const step of steps) {
    if (typeof step === "number") where = `${where}[${step}]`;
    else {
      const name = isStorable(step) ? step : quoteInput(step);
      where = where ? `${where}.${name}` : name;
    }
  }
  return where || "value";
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

/**
 * `text` made storable: U+0000 and unpaired surrogates become U+FFFD; storable text is unchanged.
 * For what is only compared or shown once the call is refused anyway (a bucket a scoped key's
 * gate names), never for what a call stores: that is refused.
 */
export function storableText(text: string): string {
  return isStorable(text) ? text : text.toWellFormed().replaceAll("\u0000", "\ufffd");
}
