// The template language of custom webhook bodies (CONTRACT section 7): `{{path}}` placeholders in
// the string values of a JSON template, filled from a context object. The result is built as a JS
// value, never as JSON text, so whatever the context holds, it serializes to valid JSON.
import { quoteInput } from "../../storable_text.ts";

/** Templates are at most this many bytes as compact JSON (`JSON.stringify`, UTF-8). */
export const MAX_TEMPLATE_BYTES = 2_048;
/** Templates nest at most this deep: the top object is level 1, each object or array inside adds one. */
export const MAX_TEMPLATE_DEPTH = 5;

type Step = { key: string } | { index: number };
type Alternative = { literal: string } | { path: Step[] };
type Piece = { text: string } | { alternatives: Alternative[] } | { error: string };

// A path: names joined by dots, each name followed by any number of `[n]` or `[-n]` indexes.
const NAME = String.raw`[^\s.\[\]|"{}]+`;
const PATH = new RegExp(String.raw`^${NAME}(?:\[-?\d+\])*(?:\.${NAME}(?:\[-?\d+\])*)*$`);
const STEP = /([^.[\]]+)|\[(-?\d+)\]/g;
// A name that indexes an array as `.0` or `.-1` does: the same integers brackets take.
const DOT_INDEX = /^-?\d+$/;

/**
 * Fills every placeholder in the string values of `template` (object keys are left as they are).
 *
 * - A string that is exactly one placeholder, with nothing around it, takes the resolved value with its
 *   JSON type (a number stays a number, an object an object, `null` stays `null`).
 * - Inside a longer string, a value is inserted as text: strings as they are, numbers and booleans
 *   via `String`, objects and arrays as JSON, `null` as nothing.
 * - `a|b|"text"`: the first value that is not empty (`undefined`, `null` or `""`) wins. When all are
 *   empty, the last one's value stands, with `undefined` becoming `""`; so `{{x}}` with `x: null`
 *   gives `null`, and a path that leads nowhere gives `""`.
 * - Paths read own properties only (`{{subject.length}}` and `{{constructor}}` lead nowhere). Arrays
 *   are indexed with brackets or dots alike, negative from the end: `attachments[0]` is
 *   `attachments.0`, `attachments[-1]` is `attachments.-1` (the last).
 * - Inserted values are never scanned again, so `{{` inside an email stays as it is.
 * - A placeholder `validateTemplate` would reject renders as `""`; a `{{` without a closing `}}` is text.
 */
export function renderTemplate(template: unknown, context: Record<string, unknown>): unknown {
  if (typeof template === "string") return renderString(template, context);
  if (Array.isArray(template)) return template.map((item) => renderTemplate(item, context));
  if (isPlainObject(template)) {
    // `fromEntries` defines own properties, so a `__proto__` key stays an ordinary key.
    return Object.fromEntries(
      Object.entries(template).map(([key, value]) => [key, renderTemplate(value, context)]),
    );
  }
  return template;
}

/** Why `template` cannot be stored, or `null` when it can. */
export function validateTemplate(template: unknown): string | null {
  if (!isPlainObject(template)) return "Invalid template: must be a JSON object";
  let json: string;
  try {
    json = JSON.stringify(template);
  } catch {
    return "Invalid template: not serializable as JSON";
  }
  const bytes = new TextEncoder().encode(json).length;
  if (bytes > MAX_TEMPLATE_BYTES) {
    return `Invalid template: larger than ${MAX_TEMPLATE_BYTES} bytes (${bytes} bytes serialized)`;
  }
  if (depth(template) > MAX_TEMPLATE_DEPTH) {
    return `Invalid template: nesting deeper than ${MAX_TEMPLATE_DEPTH} levels`;
  }
  return placeholderError(template);
}

function renderString(source: string, context: Record<string, unknown>): unknown {
  const pieces = parsePieces(source);
  const [only] = pieces;
  if (pieces.length === 1 && "alternatives" in only) return copy(resolve(only.alternatives, context));
  return pieces.map((piece) => {
    if ("text" in piece) return piece.text;
    if ("alternatives" in piece) return asText(resolve(piece.alternatives, context));
    return "";
  }).join("");
}

function resolve(alternatives: Alternative[], context: Record<string, unknown>): unknown {
  let value: unknown;
  for (const alternative of alternatives) {
    value = "literal" in alternative ? alternative.literal : lookUp(context, alternative.path);
    if (value !== undefined && value !== null && value !== "") return value;
  }
  return value === undefined ? "" : value;
}

function lookUp(context: Record<string, unknown>, path: Step[]): unknown {
  let current: unknown = context;
  for (const step of path) {
    if (Array.isArray(current)) {
      const index = "index" in step ? step.index : DOT_INDEX.test(step.key) ? Number(step.key) : undefined;
      current = index === undefined ? undefined : current.at(index);
    } else if ("key" in step) {
      current = isPlainObject(current) && Object.hasOwn(current, step.key) ? current[step.key] : undefined;
    } else {
      current = undefined;
    }
    if (current === undefined) return undefined;
  }
  return current;
}

function asText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

// The output must not share objects with the context: a caller changing one would change the other.
function copy(value: unknown): unknown {
  return typeof value === "object" && value !== null ? structuredClone(value) : value;
}

// Splits a string into literal text and placeholders. A placeholder ends at the first `}}` outside a
// quoted literal; `{{` with no `}}` after it is plain text.
function parsePieces(source: string): Piece[] {
  const pieces: Piece[] = [];
  let position = 0;
  while (position < source.length) {
    const open = source.indexOf("{{", position);
    if (open === -1) break;
    let close = closingBraces(source, open + 2);
    // A `}}` swallowed by an unclosed quote still ends the placeholder, which then fails to parse:
    // `{{a|"x}}` is a mistake to report, not text to send.
    if (close === -1) close = source.indexOf("}}", open + 2);
    if (close === -1) break;
    if (open > position) pieces.push({ text: source.slice(position, open) });
    pieces.push(parsePlaceholder(source.slice(open, close + 2)));
    position = close + 2;
  }
  if (position < source.length) pieces.push({ text: source.slice(position) });
  return pieces;
}

function closingBraces(source: string, from: number): number {
  let quoted = false;
  for (let i = from; i < source.length; i++) {
    if (source[i] === '"') quoted = !quoted;
    else if (!quoted && source.startsWith("}}", i)) return i;
  }
  return -1;
}

function parsePlaceholder(raw: string): Piece {
  const inner = raw.slice(2, -2);
  if (inner.trim() === "") return { error: "Invalid template: empty placeholder" };
  const unparsable = { error: `Invalid template: unparsable placeholder ${quoteInput(raw)}` };
  const alternatives: Alternative[] = [];
  for (const part of splitAlternatives(inner) ?? []) {
    const alternative = parseAlternative(part.trim());
    if (alternative === null) return unparsable;
    alternatives.push(alternative);
  }
  return alternatives.length === 0 ? unparsable : { alternatives };
}

// Splits at `|` outside quoted literals, so `"a|b"` stays one literal; `null` for an unclosed quote.
function splitAlternatives(inner: string): string[] | null {
  const parts: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    if (inner[i] === '"') quoted = !quoted;
    else if (!quoted && inner[i] === "|") {
      parts.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  if (quoted) return null;
  parts.push(inner.slice(start));
  return parts;
}

function parseAlternative(text: string): Alternative | null {
  if (text.startsWith('"')) {
    // Literals have no escapes, so a `"` can only close them.
    const body = text.slice(1, -1);
    return text.length >= 2 && text.endsWith('"') && !body.includes('"') ? { literal: body } : null;
  }
  if (!PATH.test(text)) return null;
  return {
    path: [...text.matchAll(STEP)].map((match) =>
      match[1] !== undefined ? { key: match[1] } : { index: Number(match[2]) }
    ),
  };
}

// Containers count, scalars do not: `{}` is depth 1, `{"a": {"b": [1]}}` depth 3.
function depth(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depth));
  if (isPlainObject(value)) return 1 + Math.max(0, ...Object.values(value).map(depth));
  return 0;
}

function placeholderError(value: unknown): string | null {
  if (typeof value === "string") {
    for (const piece of parsePieces(value)) if ("error" in piece) return piece.error;
    return null;
  }
  const children = Array.isArray(value) ? value : isPlainObject(value) ? Object.values(value) : [];
  for (const child of children) {
    const error = placeholderError(child);
    if (error !== null) return error;
  }
  return null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
