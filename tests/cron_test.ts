// The schedule cron dialect (CONTRACT section 10): validation phrases, IANA zones, and planned
// run times across zones and DST transitions, the same whatever the host's own zone is.

import assert from "node:assert/strict";
import { canonicalTimezone, nextRunAt, validateSchedule } from "../projections/cron.ts";

const FROM = new Date("2026-01-01T00:00:00Z");

Deno.test("accepts numbers, names, *, lists, ranges and steps", () => {
  for (
    const cron of [
      "*/15 * * * *",
      "0 9 * * MON-FRI",
      "0 0 * * 7",
      "0 0 * * 0",
      "0 9 1 * MON",
      "0-30/10 * * * *",
      "5 4 * jan,JUL sun",
      "5/15 * * * *",
      "0 0 * JAN-MAR/2 *",
      "  0\t9 * * *  ",
    ]
  ) {
    assert.equal(validateSchedule(cron, "UTC", FROM), null, cron);
  }
});

Deno.test("refuses what is not the five-field dialect, naming the field and the rule", () => {
  const fields = "must have 5 fields (minute hour day-of-month month day-of-week)";
  const extensions = "L, W, #, ? and + are not supported";
  const syntax = "must be numbers, *, lists, ranges or steps";
  const cases: [string, string][] = [
    ["* * * *", `Invalid schedule.cron "* * * *": ${fields}, found 4`],
    ["0 * * * * *", `Invalid schedule.cron "0 * * * * *": ${fields}, found 6`],
    ["", `Invalid schedule.cron "": ${fields}, found 0`],
    ["   ", `Invalid schedule.cron "   ": ${fields}, found 0`],
    ["@daily", `Invalid schedule.cron "@daily": @ macros are not supported, use "0 0 * * *"`],
    ["@hourly", `Invalid schedule.cron "@hourly": @ macros are not supported, use "0 * * * *"`],
    ["@reboot", `Invalid schedule.cron "@reboot": @ macros are not supported, write the 5 fields`],
    ["61 * * * *", `Invalid schedule.cron "61 * * * *": minute must be 0-59`],
    ["* 24 * * *", `Invalid schedule.cron "* 24 * * *": hour must be 0-23`],
    ["0 0 0 * *", `Invalid schedule.cron "0 0 0 * *": day-of-month must be 1-31`],
    ["0 0 * 13 *", `Invalid schedule.cron "0 0 * 13 *": month must be 1-12 or JAN-DEC`],
    ["0 0 * * 8", `Invalid schedule.cron "0 0 * * 8": day-of-week must be 0-7 or SUN-SAT`],
    ["0 0 L * *", `Invalid schedule.cron "0 0 L * *": day-of-month "L": ${extensions}`],
    ["0 0 * * 1#2", `Invalid schedule.cron "0 0 * * 1#2": day-of-week "1#2": ${extensions}`],
    ["0 0 ? * *", `Invalid schedule.cron "0 0 ? * *": day-of-month "?": ${extensions}`],
    ["0 0 15W * *", `Invalid schedule.cron "0 0 15W * *": day-of-month "15W": ${extensions}`],
    ["0 0 * * 5L", `Invalid schedule.cron "0 0 * * 5L": day-of-week "5L": ${extensions}`],
    ["0 0 1 * +MON", `Invalid schedule.cron "0 0 1 * +MON": day-of-week "+MON": ${extensions}`],
    ["0 0 30 2 *", `Invalid schedule.cron "0 0 30 2 *": never fires`],
    ["0 0 31 4 *", `Invalid schedule.cron "0 0 31 4 *": never fires`],
    ["hello world foo bar baz", `Invalid schedule.cron "hello world foo bar baz": minute "hello" ${syntax}`],
    ["MON * * * *", `Invalid schedule.cron "MON * * * *": minute "MON" ${syntax}`],
    ["1,,2 * * * *", `Invalid schedule.cron "1,,2 * * * *": minute "1,,2" ${syntax}`],
    ["*-5 * * * *", `Invalid schedule.cron "*-5 * * * *": minute "*-5" ${syntax}`],
    [
      "0 0 * FOO *",
      `Invalid schedule.cron "0 0 * FOO *": month "FOO" must be numbers, names JAN-DEC, *, lists, ranges or steps`,
    ],
    ["*/0 * * * *", `Invalid schedule.cron "*/0 * * * *": minute step must be 1-59`],
    ["30-10 * * * *", `Invalid schedule.cron "30-10 * * * *": minute range "30-10" must go from low to high`],
    [
      "0 0 * * FRI-SUN",
      `Invalid schedule.cron "0 0 * * FRI-SUN": day-of-week range "FRI-SUN" must go from low to high ` +
      "(Sunday is 7 at the end of a range)",
    ],
    ["x".repeat(201), "Invalid schedule.cron: longer than 200 characters"],
  ];
  for (const [cron, phrase] of cases) assert.equal(validateSchedule(cron, "UTC", FROM), phrase, cron);
});

Deno.test("timezone must be an IANA name", () => {
  for (
    const zone of [
      "Europe/Rome",
      "UTC",
      "utc",
      "Etc/UTC",
      "America/Argentina/Buenos_Aires",
      "Asia/Kolkata",
      "EST",
    ]
  ) {
    assert.equal(validateSchedule("0 9 * * *", zone, FROM), null, zone);
  }
  // Offsets, ICU's legacy abbreviations and ISO strings pass Intl or Temporal, but are not IANA names.
  for (
    const zone of ["Mars/Olympus", "+02:00", "-0500", "", "PST", "CEST", "SystemV/AST4", "2026-01-01T00:00Z"]
  ) {
    assert.equal(
      validateSchedule("0 9 * * *", zone, FROM),
      `Invalid schedule.timezone ${JSON.stringify(zone)}: not an IANA time zone`,
    );
  }
  assert.equal(
    validateSchedule("0 9 * * *", "A".repeat(65), FROM),
    "Invalid schedule.timezone: longer than 64 characters",
  );
});

Deno.test("the cron phrase comes first when both fields are wrong", () => {
  assert.equal(
    validateSchedule("61 * * * *", "Mars/Olympus", FROM),
    `Invalid schedule.cron "61 * * * *": minute must be 0-59`,
  );
});

Deno.test("canonicalTimezone fixes the case and keeps the chosen link", () => {
  assert.equal(canonicalTimezone("utc"), "UTC");
  assert.equal(canonicalTimezone("europe/rome"), "Europe/Rome");
  assert.equal(canonicalTimezone("etc/utc"), "Etc/UTC");
  assert.equal(canonicalTimezone("asia/kolkata"), "Asia/Kolkata");
  assert.equal(canonicalTimezone("America/Buenos_Aires"), "America/Buenos_Aires");
  assert.throws(() => canonicalTimezone("+02:00"), {
    name: "RangeError",
    message: 'Invalid schedule.timezone "+02:00": not an IANA time zone',
  });
});

Deno.test("nextRunAt refuses what validateSchedule refuses", () => {
  assert.throws(() => nextRunAt("@daily", "UTC", FROM), RangeError);
  assert.throws(() => nextRunAt("0 9 * * *", "Mars/Olympus", FROM), RangeError);
  assert.throws(() => nextRunAt("0 9 * * *", "UTC", new Date(NaN)), RangeError);
  assert.equal(nextRunAt("0 0 30 2 *", "UTC", FROM), null);
});

Deno.test("the next run is strictly after the given instant", () => {
  const at = (iso: string) => nextRunAt("30 1 * * *", "America/New_York", new Date(iso))?.toISOString();
  assert.equal(at("2026-11-01T05:29:59.999Z"), "2026-11-01T05:30:00.000Z");
  assert.equal(at("2026-11-01T05:30:00.000Z"), "2026-11-02T06:30:00.000Z");
  assert.equal(at("2026-11-01T05:30:00.001Z"), "2026-11-02T06:30:00.000Z");
});

/** A schedule, where to start, and the runs it must plan one after the other (UTC instants). */
interface RunCase {
  name: string;
  cron: string;
  timezone: string;
  after: string;
  runs: string[];
}

const RUN_CASES: RunCase[] = [
  {
    name: "New York spring forward: 02:30 does not exist, runs at 03:00 EDT",
    cron: "30 2 * * *",
    timezone: "America/New_York",
    after: "2026-03-07T12:00:00Z",
    runs: ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"],
  },
  {
    name: "New York fall back: 01:30 occurs twice, runs once (EDT)",
    cron: "30 1 * * *",
    timezone: "America/New_York",
    after: "2026-10-31T12:00:00Z",
    runs: ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"],
  },
  {
    name: "Rome spring forward: 02:30 runs at 03:00 CEST",
    cron: "30 2 * * *",
    timezone: "Europe/Rome",
    after: "2026-03-28T12:00:00Z",
    runs: ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"],
  },
  {
    name: "Rome fall back: 02:30 runs once (CEST)",
    cron: "30 2 * * *",
    timezone: "Europe/Rome",
    after: "2026-10-24T12:00:00Z",
    runs: ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"],
  },
  {
    name: "Sydney spring forward: 02:30 runs at 03:00 AEDT",
    cron: "30 2 * * *",
    timezone: "Australia/Sydney",
    after: "2026-10-03T00:00:00Z",
    runs: ["2026-10-03T16:00:00Z", "2026-10-04T15:30:00Z"],
  },
  {
    name: "Sydney fall back: 02:30 runs once (AEDT)",
    cron: "30 2 * * *",
    timezone: "Australia/Sydney",
    after: "2026-04-04T00:00:00Z",
    runs: ["2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"],
  },
  {
    name: "Lord Howe 30-minute shift: 02:15 does not exist, runs at 02:30",
    cron: "15 2 * * *",
    timezone: "Australia/Lord_Howe",
    after: "2026-10-03T00:00:00Z",
    runs: ["2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"],
  },
  {
    name: "Rome in April is UTC+2",
    cron: "0 9 * * *",
    timezone: "Europe/Rome",
    after: "2026-04-10T00:00:00Z",
    runs: ["2026-04-10T07:00:00Z", "2026-04-11T07:00:00Z"],
  },
  {
    name: "Kolkata is a half-hour zone",
    cron: "30 9 * * *",
    timezone: "Asia/Kolkata",
    after: "2026-01-01T00:00:00Z",
    runs: ["2026-01-01T04:00:00Z"],
  },
  {
    name: "day-of-month OR day-of-week: every Monday and the 1st",
    cron: "0 9 1 * MON",
    timezone: "UTC",
    after: "2026-05-28T00:00:00Z",
    runs: [
      "2026-06-01T09:00:00Z",
      "2026-06-08T09:00:00Z",
      "2026-06-15T09:00:00Z",
      "2026-06-22T09:00:00Z",
      "2026-06-29T09:00:00Z",
      "2026-07-01T09:00:00Z",
      "2026-07-06T09:00:00Z",
    ],
  },
  {
    name: "a day field that selects every day is not a restriction",
    cron: "0 0 */1 * MON",
    timezone: "UTC",
    after: "2026-01-01T00:00:00Z",
    runs: ["2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z"],
  },
  {
    name: "29 February waits for a leap year",
    cron: "0 0 29 2 *",
    timezone: "UTC",
    after: "2026-01-01T00:00:00Z",
    runs: ["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"],
  },
  {
    name: "29 February after 2096 is in 2104 (2100 is not a leap year)",
    cron: "0 0 29 2 *",
    timezone: "UTC",
    after: "2096-03-01T00:00:00Z",
    runs: ["2104-02-29T00:00:00Z"],
  },
  {
    name: "minute steps restart every hour",
    cron: "*/7 * * * *",
    timezone: "UTC",
    after: "2026-01-01T00:50:00Z",
    runs: ["2026-01-01T00:56:00Z", "2026-01-01T01:00:00Z", "2026-01-01T01:07:00Z"],
  },
  {
    name: "an open step a/n runs from a to the end of the field",
    cron: "50/5 * * * *",
    timezone: "UTC",
    after: "2026-01-01T00:00:00Z",
    runs: ["2026-01-01T00:50:00Z", "2026-01-01T00:55:00Z", "2026-01-01T01:50:00Z"],
  },
  {
    name: "a list of hours is fixed-time too: 02:30 runs at 03:00 on the spring-forward day",
    cron: "30 2,14 * * *",
    timezone: "America/New_York",
    after: "2026-03-07T12:00:00Z",
    runs: ["2026-03-07T19:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T18:30:00Z", "2026-03-09T06:30:00Z"],
  },
  {
    name: "a list of hours runs a repeated time once",
    cron: "30 1,13 * * *",
    timezone: "America/New_York",
    after: "2026-10-31T12:00:00Z",
    runs: ["2026-10-31T17:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T18:30:00Z"],
  },
  {
    name: "a range of hours: 02:00 and 03:00 meet at the end of the gap and run once",
    cron: "0 1-3 * * *",
    timezone: "America/New_York",
    after: "2026-03-08T05:30:00Z",
    runs: ["2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-09T05:00:00Z"],
  },
  {
    name: "an hourly job keeps running hourly through the repeated hour",
    cron: "0 * * * *",
    timezone: "America/New_York",
    after: "2026-11-01T04:30:00Z",
    runs: ["2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"],
  },
  {
    name: "an hourly job skips the hour that does not exist",
    cron: "0 * * * *",
    timezone: "America/New_York",
    after: "2026-03-08T05:30:00Z",
    runs: ["2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"],
  },
  {
    name: "a minute step inside the missing hour does not run that day",
    cron: "*/30 2 * * *",
    timezone: "America/New_York",
    after: "2026-03-07T12:00:00Z",
    runs: ["2026-03-09T06:00:00Z", "2026-03-09T06:30:00Z"],
  },
];

/** The runs each case plans, as ISO strings; the subprocess below runs this same function. */
function planRuns(cases: RunCase[]): string[][] {
  return cases.map(({ cron, timezone, after, runs }) => {
    const planned: string[] = [];
    let from = new Date(after);
    for (let i = 0; i < runs.length; i++) {
      const next = nextRunAt(cron, timezone, from);
      if (next === null) break;
      planned.push(next.toISOString());
      from = next;
    }
    return planned;
  });
}

const expectedRuns = RUN_CASES.map(({ runs }) => runs.map((iso) => new Date(iso).toISOString()));

for (const [index, runCase] of RUN_CASES.entries()) {
  Deno.test(`nextRunAt: ${runCase.name}`, () => {
    assert.deepEqual(planRuns([runCase])[0], expectedRuns[index]);
  });
}

for (const hostZone of ["Australia/Sydney", "America/New_York"]) {
  Deno.test(`nextRunAt plans the same runs when the host zone is ${hostZone}`, async () => {
    // A fresh process, so the host zone is set before anything reads it.
    const code = `
      import { nextRunAt } from ${JSON.stringify(new URL("../projections/cron.ts", import.meta.url).href)};
      const cases = JSON.parse(await new Response(Deno.stdin.readable).text());
      ${planRuns.toString()}
      console.log(JSON.stringify({
        hostZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        runs: planRuns(cases),
      }));
    `;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["eval", "--frozen", "--ext=ts", code],
      cwd: new URL("..", import.meta.url),
      env: { TZ: hostZone },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(JSON.stringify(RUN_CASES)));
    await writer.close();
    const output = await child.output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    const result = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.equal(result.hostZone, hostZone);
    assert.deepEqual(result.runs, expectedRuns);
  });
}

// A seeded simulation: random expressions built with a known set of values per field, each answer
// checked against a brute-force model of the dialect (UTC, so only the fields are under test).

interface ModelField {
  min: number;
  max: number;
  /** Last value of `*` and of `a/n`: day-of-week 7 is only another name for Sunday. */
  last: number;
  names?: string[];
}

const MODEL_FIELDS: ModelField[] = [
  { min: 0, max: 59, last: 59 },
  { min: 0, max: 23, last: 23 },
  { min: 1, max: 31, last: 31 },
  {
    min: 1,
    max: 12,
    last: 12,
    names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
  },
  { min: 0, max: 7, last: 6, names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] },
];

function seededRandom(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return Math.floor(state / 65536) % n;
  };
}

/** A random field text and the values it selects. */
function randomField(field: ModelField, random: (n: number) => number): [string, Set<number>] {
  const values = new Set<number>();
  const select = (from: number, to: number, step: number) => {
    for (let v = from; v <= to; v += step) values.add(field.max === 7 && v === 7 ? 0 : v);
  };
  const spell = (v: number) => {
    const name = field.names?.[v - field.min];
    if (name === undefined || random(2) === 0) return String(v);
    return random(2) === 0 ? name : name.toLowerCase();
  };
  const items: string[] = [];
  for (let i = 1 + random(3); i > 0; i--) {
    const a = field.min + random(field.max - field.min + 1);
    const b = a + random(field.max - a + 1);
    const n = 1 + random(Math.min(field.max, 12));
    switch (random(6)) {
      case 0:
        items.push("*");
        select(field.min, field.last, 1);
        break;
      case 1:
        items.push(`*/${n}`);
        select(field.min, field.last, n);
        break;
      case 2:
        items.push(spell(a));
        select(a, a, 1);
        break;
      case 3:
        items.push(`${spell(a)}-${spell(b)}`);
        select(a, b, 1);
        break;
      case 4:
        items.push(`${spell(a)}-${spell(b)}/${n}`);
        select(a, b, n);
        break;
      default:
        items.push(`${spell(a)}/${n}`);
        select(a, Math.max(a, field.last), n);
    }
  }
  return [items.join(","), values];
}

/** The first matching minute after `after`, day by day for nine years (two leap days at least). */
function modelNextRun(fields: Set<number>[], after: Date): Date | null {
  const [minutes, hours, daysOfMonth, months, daysOfWeek] = fields;
  const everyDayOfMonth = daysOfMonth.size === 31;
  const everyDayOfWeek = daysOfWeek.size === 7;
  const sorted = (set: Set<number>) => [...set].sort((x, y) => x - y);
  const dayMs = 86_400_000;
  const firstDay = Date.UTC(after.getUTCFullYear(), after.getUTCMonth(), after.getUTCDate());
  for (let day = firstDay; day < firstDay + 9 * 366 * dayMs; day += dayMs) {
    const date = new Date(day);
    if (!months.has(date.getUTCMonth() + 1)) continue;
    const byMonth = daysOfMonth.has(date.getUTCDate());
    const byWeek = daysOfWeek.has(date.getUTCDay());
    // Vixie OR when both are restricted; an unrestricted field leaves the other one in charge.
    const dayMatches = everyDayOfMonth ? byWeek : everyDayOfWeek ? byMonth : byMonth || byWeek;
    if (!dayMatches) continue;
    for (const hour of sorted(hours)) {
      for (const minute of sorted(minutes)) {
        const at = day + hour * 3_600_000 + minute * 60_000;
        if (at > after.getTime()) return new Date(at);
      }
    }
  }
  return null;
}

Deno.test("random expressions plan the runs a brute-force model of the dialect plans", () => {
  const random = seededRandom(20260308);
  for (let i = 0; i < 1000; i++) {
    const fields = MODEL_FIELDS.map((field) => randomField(field, random));
    const cron = fields.map(([text]) => text).join(" ");
    const after = new Date(Date.UTC(2026, 0, 1) + random(1500) * 86_400_000 + random(86_400_000));
    const expected = modelNextRun(fields.map(([, values]) => values), after);
    const phrase = validateSchedule(cron, "UTC", after);
    if (expected === null) {
      assert.equal(phrase, `Invalid schedule.cron ${JSON.stringify(cron)}: never fires`);
      continue;
    }
    assert.equal(phrase, null, cron);
    assert.equal(
      nextRunAt(cron, "UTC", after)?.toISOString(),
      expected.toISOString(),
      `${cron} after ${after.toISOString()}`,
    );
  }
});
