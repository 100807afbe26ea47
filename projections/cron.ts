// The cron dialect of schedules (CONTRACT section 10): five POSIX fields in an IANA time zone,
// planned on the zone's wall clock. Pure: every function takes the instant it reasons from.
//
// We parse the fields ourselves, so every refusal is a precise 400 phrase and croner's extensions
// (seconds, years, `@` macros, L W # ? +) never get through; croner only computes run times, from
// a pattern we rewrote into plain numbers.
//
// DST, as croner 11 plans it with the options below (pinned in tests/cron_test.ts):
// - fixed-time jobs (no `*` and no step in minute and hour: `30 2 * * *`, `30 2,14 * * *`): a time
//   skipped by a spring-forward gap runs at the first instant after the gap, the same day; a time
//   that occurs twice on a fall-back day runs once, at its first occurrence;
// - interval jobs (a `*` or a step in minute or hour: `*/15 * * * *`, `0 * * * *`) keep their
//   real-time rhythm, as Vixie cron does: times inside a gap are skipped, a repeated hour runs again.

import { Cron, type CronOptions } from "croner";
import type { Parsed } from "../src/parsed.ts";

export const MAX_CRON_LENGTH = 200;
export const MAX_TIMEZONE_LENGTH = 64;

interface FieldRule {
  name: string;
  min: number;
  max: number;
  /** Names in the order of their numbers, starting at `min` (JAN = 1, SUN = 0). */
  names?: readonly string[];
  /** Last value of `*` and of an open step `a/n`: day-of-week stops at Saturday, 7 only aliases 0. */
  last: number;
  /** Day fields combine by OR when both are restricted, so selecting every day must mean `*`. */
  isDay: boolean;
}

const FIELD_RULES: readonly FieldRule[] = [
  { name: "minute", min: 0, max: 59, last: 59, isDay: false },
  { name: "hour", min: 0, max: 23, last: 23, isDay: false },
  { name: "day-of-month", min: 1, max: 31, last: 31, isDay: true },
  {
    name: "month",
    min: 1,
    max: 12,
    names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
    last: 12,
    isDay: false,
  },
  {
    name: "day-of-week",
    min: 0,
    max: 7,
    names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
    last: 6,
    isDay: true,
  },
];

/** What the `@` macros stand for, so the refusal tells the user the five fields to write. */
const MACRO_FIELDS: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

/**
 * Pinned so a croner upgrade cannot silently change what a schedule means: five fields only, OR
 * of the day fields, standard weekday numbers, no sloppy steps (we expand `a/n` ourselves), and
 * Vixie's idea of a fixed-time job, so a list like `30 2,14` keeps its 02:30 run on a DST day
 * (croner's default, "single-value", would skip it).
 */
const CRON_OPTIONS: CronOptions = {
  mode: "5-part",
  domAndDow: false,
  alternativeWeekdays: false,
  sloppyRanges: false,
  fixedTimeRule: "no-wildcard",
  paused: true,
};

/**
 * Checks a schedule as the API receives it. Returns the 400 phrase, or null when the expression
 * is valid, the zone is an IANA name and the schedule fires at least once after `from`.
 */
export function validateSchedule(cron: string, timezone: string, from: Date): string | null {
  const pattern = parseCron(cron);
  if (!pattern.ok) return pattern.phrase;
  const zone = ianaTimezone(timezone);
  if (zone === null) return timezonePhrase(timezone);
  if (nextRun(pattern.value, zone, from) === null) return `${cronPrefix(cron)}: never fires`;
  return null;
}

/**
 * The 400 phrase when `cron` is not our cron syntax, else null: the schema's own rule (a refinement of
 * the schedule in webhooks/config/input.ts). Whether it fires again depends on the time: validateSchedule.
 */
export function cronProblem(cron: string): string | null {
  const pattern = parseCron(cron);
  return pattern.ok ? null : pattern.phrase;
}

/** The 400 phrase when `timezone` is not an IANA time zone the runtime knows, else null (a schema rule too). */
export function timezoneProblem(timezone: string): string | null {
  return ianaTimezone(timezone) === null ? timezonePhrase(timezone) : null;
}

/**
 * The first planned run strictly after `after`, or null when the schedule never fires again.
 * Throws a RangeError carrying the 400 phrase for input that `validateSchedule` refuses.
 */
export function nextRunAt(cron: string, timezone: string, after: Date): Date | null {
  const pattern = parseCron(cron);
  if (!pattern.ok) throw new RangeError(pattern.phrase);
  return nextRun(pattern.value, canonicalTimezone(timezone), after);
}

/**
 * The IANA name as the tz database spells it (`utc` -> `UTC`, `europe/rome` -> `Europe/Rome`).
 * A link keeps the name the user chose (`Asia/Kolkata` does not become ICU's `Asia/Calcutta`), so
 * a schedule reads back as it was written. Throws a RangeError for a name that is not IANA.
 */
export function canonicalTimezone(tz: string): string {
  const zone = ianaTimezone(tz);
  if (zone === null) throw new RangeError(timezonePhrase(tz));
  return zone;
}

function nextRun(pattern: string, zone: string, after: Date): Date | null {
  if (Number.isNaN(after.getTime())) throw new RangeError("Invalid date: cannot plan a run after it");
  return new Cron(pattern, { ...CRON_OPTIONS, timezone: zone }).nextRun(after);
}

/**
 * Only IANA-shaped names: Intl also takes offsets (`+02:00`) and ICU's legacy IDs (`PST`, `BST`,
 * `SystemV/AST4`); Temporal takes offsets too, but checks names against the IANA list and fixes
 * their case without resolving links.
 */
export const IANA_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

function ianaTimezone(tz: string): string | null {
  if (tz.length > MAX_TIMEZONE_LENGTH || !IANA_NAME.test(tz)) return null;
  try {
    const zone = new Temporal.ZonedDateTime(0n, tz).timeZoneId;
    // croner converts through Intl, so the zone must work there as well.
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return zone;
  } catch {
    return null;
  }
}

function timezonePhrase(tz: string): string {
  if (tz.length > MAX_TIMEZONE_LENGTH) {
    return `Invalid schedule.timezone: longer than ${MAX_TIMEZONE_LENGTH} characters`;
  }
  return `Invalid schedule.timezone ${JSON.stringify(tz)}: not an IANA time zone`;
}

function cronPrefix(cron: string): string {
  return `Invalid schedule.cron ${JSON.stringify(cron)}`;
}

/** The five fields rewritten for croner, or the phrase saying what is wrong. */
function parseCron(cron: string): Parsed<string> {
  if (cron.length > MAX_CRON_LENGTH) {
    return { ok: false, phrase: `Invalid schedule.cron: longer than ${MAX_CRON_LENGTH} characters` };
  }
  const text = cron.trim();
  // croner accepts macros even in 5-part mode.
  if (text.startsWith("@")) {
    const fields = MACRO_FIELDS[text.toLowerCase()];
    const hint = fields === undefined ? "write the 5 fields" : `use ${JSON.stringify(fields)}`;
    return { ok: false, phrase: `${cronPrefix(cron)}: @ macros are not supported, ${hint}` };
  }
  const fields = text === "" ? [] : text.split(/\s+/);
  if (fields.length !== FIELD_RULES.length) {
    const expected = "must have 5 fields (minute hour day-of-month month day-of-week)";
    return { ok: false, phrase: `${cronPrefix(cron)}: ${expected}, found ${fields.length}` };
  }
  const rewritten: string[] = [];
  for (const [index, rule] of FIELD_RULES.entries()) {
    const field = parseField(fields[index], rule);
    if (!field.ok) return { ok: false, phrase: `${cronPrefix(cron)}: ${field.phrase}` };
    rewritten.push(field.value);
  }
  return { ok: true, value: rewritten.join(" ") };
}

/** One list item: `*` or `a` or `a-b`, with an optional step. */
interface Item {
  star: boolean;
  start: number;
  end: number;
  step: number | null;
}

function parseField(field: string, rule: FieldRule): Parsed<string> {
  const items: Item[] = [];
  for (const text of field.split(",")) {
    const item = parseItem(text, field, rule);
    if (!item.ok) return item;
    items.push(item.value);
  }
  // croner reads any day field other than `*` as restricted: `*/1` or `0-6` would make the other
  // day field an OR with "every day". Restricted means "not every day", so they become `*`.
  if (rule.isDay && coversEveryValue(items, rule)) return { ok: true, value: "*" };
  return { ok: true, value: items.map(itemPattern).join(",") };
}

const ITEM = /^(\*|[A-Za-z0-9]+)(?:-([A-Za-z0-9]+))?(?:\/([0-9]+))?$/;
/** Quartz and croner extensions, recognized only to name them in the refusal. */
const EXTENSION = /[#?+]|^L$|^L-|^[0-9]*L$|^[0-9]*W$|^LW$/i;

function parseItem(text: string, field: string, rule: FieldRule): Parsed<Item> {
  const where = `${rule.name} ${JSON.stringify(field)}`;
  if (EXTENSION.test(text)) return { ok: false, phrase: `${where}: L, W, #, ? and + are not supported` };
  const [, first, last, stepText]: (string | undefined)[] = ITEM.exec(text) ?? [];
  const isToken = (token: string | undefined) =>
    token !== undefined && (/^[0-9]+$/.test(token) || isName(token, rule));
  const wellFormed = first === "*"
    ? last === undefined
    : isToken(first) && (last === undefined || isToken(last));
  if (first === undefined || !wellFormed) {
    const names = rule.names === undefined ? "" : `, names ${rule.names[0]}-${rule.names.at(-1)}`;
    return { ok: false, phrase: `${where} must be numbers${names}, *, lists, ranges or steps` };
  }
  const step = stepText === undefined ? null : Number(stepText);
  if (step !== null && (step < 1 || step > rule.max)) {
    return { ok: false, phrase: `${rule.name} step must be 1-${rule.max}` };
  }
  if (first === "*") return { ok: true, value: { star: true, start: rule.min, end: rule.last, step } };

  const start = fieldValue(first, rule);
  const end = last === undefined ? start : fieldValue(last, rule);
  if (start === null || end === null) return { ok: false, phrase: rangePhrase(rule) };
  if (start > end) {
    const sunday = rule.name === "day-of-week" ? " (Sunday is 7 at the end of a range)" : "";
    return {
      ok: false,
      phrase: `${rule.name} range ${JSON.stringify(text)} must go from low to high${sunday}`,
    };
  }
  // An open step `a/n` runs from a to the end of the field (croner refuses it unless sloppy).
  const openEnd = last === undefined && step !== null ? Math.max(start, rule.last) : end;
  return { ok: true, value: { star: false, start, end: openEnd, step } };
}

function itemPattern(item: Item): string {
  // The step is kept even when it is 1: croner counts a step as an interval job for DST.
  const step = item.step === null ? "" : `/${item.step}`;
  if (item.star) return `*${step}`;
  if (item.start === item.end) return `${item.start}`;
  return `${item.start}-${item.end}${step}`;
}

function coversEveryValue(items: readonly Item[], rule: FieldRule): boolean {
  const seen = new Set<number>();
  for (const item of items) {
    for (let value = item.start; value <= item.end; value += item.step ?? 1) {
      seen.add(value % 7 === 0 && rule.name === "day-of-week" ? 0 : value);
    }
  }
  return seen.size === rule.last - rule.min + 1;
}

function isName(token: string, rule: FieldRule): boolean {
  return rule.names?.includes(token.toUpperCase()) ?? false;
}

/** The number of a value, or null when it is outside the field's range. */
function fieldValue(token: string, rule: FieldRule): number | null {
  if (/^[0-9]+$/.test(token)) {
    const n = Number(token);
    return n >= rule.min && n <= rule.max ? n : null;
  }
  const index = rule.names?.indexOf(token.toUpperCase()) ?? -1;
  return index === -1 ? null : rule.min + index;
}

function rangePhrase(rule: FieldRule): string {
  const names = rule.names === undefined ? "" : ` or ${rule.names[0]}-${rule.names.at(-1)}`;
  return `${rule.name} must be ${rule.min}-${rule.max}${names}`;
}
