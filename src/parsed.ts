// Input parsed for a call (Parsed: the value, or the 400 phrase that refuses it), for every transport.
// Turns zod issues into the 400 phrase of CONTRACT section 1: the field and the rule. Field names
// come from the client, so a phrase shows them escaped and bounded (quoteInput) unless they are plain;
// a value storage cannot hold (storable_text.ts) is refused with the field it is in.
import type { z } from "zod";
import { isStorable, type PathStep, quoteInput, UNSTORABLE_RULE, unstorablePath } from "./storable_text.ts";

/** Unknown field names a phrase lists at most; more are "…". */
const MAX_LISTED_NAMES = 5;

/** A field name as a phrase shows it: as sent when quoting would change nothing, else quoted. */
export function shownName(name: string): string {
  const quoted = quoteInput(name);
  return name !== "" && quoted === `"${name}"` ? name : quoted;
}

/** Steps of a path a phrase shows at most; a deeper one ends in "…" (JSON nests 100,000 deep). */
const MAX_SHOWN_STEPS = 8;

/** A path into the input as phrases name it: `options.chat_id`, `buckets.0`, `template."a\u0000"`. */
export function fieldPath(steps: readonly (PathStep | symbol)[], prefix?: string): string {
  const shown = steps.slice(0, MAX_SHOWN_STEPS)
    .map((step) => typeof step === "string" ? shownName(step) : String(step));
  if (steps.length > MAX_SHOWN_STEPS) shown.push("…");
  return [...(prefix ? [prefix] : []), ...shown].join(".");
}

/**
 * A refinement's issue whose message is a whole phrase after "Invalid " (`template: required for
 * format "custom"`), the field named in it: shown below the path the refinement sits at.
 */
export const WHOLE_PHRASE = { wholePhrase: true } as const;

export function issuePhrase(error: z.ZodError, prefix?: string): string {
  const issue = error.issues[0];
  const path = fieldPath(issue.path, prefix);
  if (issue.code === "custom" && issue.params?.wholePhrase === true) {
    return `Invalid ${path ? `${path}.` : ""}${issue.message}`;
  }
  if (issue.code === "unrecognized_keys") {
    const where = path ? ` in ${path}` : "";
    const names = issue.keys.slice(0, MAX_LISTED_NAMES).map(shownName);
    if (issue.keys.length > MAX_LISTED_NAMES) names.push("…");
    return `Unknown field${issue.keys.length > 1 ? "s" : ""}${where}: ${names.join(", ")}`;
  }
  return path ? `Invalid ${path}: ${issue.message}` : `Invalid request: ${issue.message}`;
}

/**
 * The 400 phrase of the first string in `value` (a value or an object key) that Postgres cannot
 * store, naming its field as the other phrases do; undefined when every string can be stored.
 * `field` names `value` itself and prefixes the paths inside it.
 */
export function unstorablePhrase(value: unknown, field?: string): string | undefined {
  const steps = unstorablePath(value);
  if (steps === undefined) return undefined;
  const path = fieldPath(steps, field);
  return path ? `Invalid ${path}: ${UNSTORABLE_RULE}` : `Invalid request: ${UNSTORABLE_RULE}`;
}

/**
 * unstorablePhrase for parameters (path, query and header parameters, MCP's names and cursors):
 * short text the client typed, so the phrase quotes it too, escaped, as `Invalid ttl "-3": ...`
 * does: `Invalid cursor "\u0000": must not contain U+0000 or unpaired surrogates`.
 */
export function unstorableParameterPhrase(parameters: unknown): string | undefined {
  const steps = unstorablePath(parameters);
  if (steps === undefined) return undefined;
  const last = steps.at(-1);
  // An unstorable name is shown quoted in the path already; else the value is what to quote.
  const value = typeof last === "string" && !isStorable(last)
    ? undefined
    : steps.reduce<unknown>((at, step) => (at as Record<PathStep, unknown>)[step], parameters);
  const shown = typeof value === "string" ? ` ${quoteInput(value)}` : "";
  return `Invalid ${fieldPath(steps) || "request"}${shown}: ${UNSTORABLE_RULE}`;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; phrase: string };

export function parseWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  prefix?: string,
): Parsed<z.infer<S>> {
  const result = schema.safeParse(input);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, phrase: issuePhrase(result.error, prefix) };
}

/** parseWith, and what the schema lets through must also be storable (unstorablePhrase). */
export function parseStorable<S extends z.ZodType>(
  schema: S,
  input: unknown,
  prefix?: string,
): Parsed<z.infer<S>> {
  const parsed = parseWith(schema, input, prefix);
  if (!parsed.ok) return parsed;
  const phrase = unstorablePhrase(parsed.value, prefix);
  return phrase === undefined ? parsed : { ok: false, phrase };
}

/** parseWith for parameters, which must also be storable (unstorableParameterPhrase). */
export function parseParameters<S extends z.ZodType>(schema: S, input: unknown): Parsed<z.infer<S>> {
  const parsed = parseWith(schema, input);
  if (!parsed.ok) return parsed;
  const phrase = unstorableParameterPhrase(parsed.value);
  return phrase === undefined ? parsed : { ok: false, phrase };
}

/** A route validator's result, as zod-openapi hands it to the app's hook. */
export type ValidatorResult = { success: true; data: unknown } | { success: false; error: z.ZodError };

/**
 * The 400 phrase for a route's path, query or header parameters: the schema's rule, or else the
 * first parameter it accepted that storage cannot hold (`?cursor=%00`, unstorableParameterPhrase);
 * undefined when all is well.
 */
export function validatorPhrase(result: ValidatorResult): string | undefined {
  return result.success ? unstorableParameterPhrase(result.data) : issuePhrase(result.error);
}
