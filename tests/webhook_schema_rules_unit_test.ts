// The rules that refuse a webhook body live in its schema (issue 24 item 6): the zod schema refuses
// with the phrase the service has always answered, and the JSON Schema /openapi.json shows for the
// same body (documentedJson) refuses it too, checked here by an independent validator (Ajv, draft
// 2020-12, the dialect of OpenAPI 3.1). Valid bodies pass both.
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { z } from "zod";
import { CreateWebhookInput, PatchWebhookInput, ReplaceWebhookInput } from "../src/webhooks/config/input.ts";
import { parseWith } from "../src/parsed.ts";
import { documentedJson } from "../src/http/json_body.ts";
import { SettingsInput } from "../src/http/routes/settings.ts";

const ajv = new Ajv2020({ strict: false, validateFormats: false });
const documented = (schema: z.ZodType) =>
  ajv.compile(documentedJson(schema, "").content["application/json"].schema);

const URL = "https://hooks.example.com/in";
const CRON = { cron: "0 9 * * 1-5", timezone: "Europe/Paris" };

const refused: [string, Record<string, unknown>, string][] = [
  [
    "format with schedule",
    { url: URL, schedule: CRON, format: "slack" },
    "Invalid format: not allowed with schedule",
  ],
  [
    "options with schedule",
    { url: URL, schedule: CRON, options: {} },
    "Invalid options: not allowed with schedule",
  ],
  [
    "custom without template",
    { url: URL, format: "custom" },
    'Invalid template: required for format "custom"',
  ],
  [
    "template without custom",
    { url: URL, format: "slack", template: { a: 1 } },
    'Invalid template: only allowed with format "custom"',
  ],
  [
    "template without format",
    { url: URL, template: { a: 1 } },
    'Invalid template: only allowed with format "custom"',
  ],
  [
    "telegram without chat_id",
    { url: URL, format: "telegram" },
    'Invalid options.chat_id: required for format "telegram"',
  ],
  [
    "telegram with empty chat_id",
    { url: URL, format: "telegram", options: { chat_id: "" } },
    'Invalid options.chat_id: required for format "telegram"',
  ],
  [
    "pagerduty without routing_key",
    { url: URL, format: "pagerduty" },
    'Invalid options.routing_key: required for format "pagerduty"',
  ],
  [
    "pagerduty with an unknown severity",
    { url: URL, format: "pagerduty", options: { routing_key: "r", severity: "loud" } },
    'Invalid options.severity "loud": must be one of critical, error, warning, info',
  ],
];

const accepted: [string, Record<string, unknown>][] = [
  ["plain mailbox", { url: URL }],
  ["scheduled", { url: URL, schedule: CRON }],
  ["custom with template", { url: URL, format: "custom", template: { text: "{{subject}}" } }],
  ["telegram with chat_id", { url: URL, format: "telegram", options: { chat_id: "42" } }],
  ["pagerduty with severity", {
    url: URL,
    format: "pagerduty",
    options: { routing_key: "r", severity: "info" },
  }],
];

for (const schema of [CreateWebhookInput, ReplaceWebhookInput] as z.ZodType[]) {
  const valid = documented(schema);
  Deno.test(`${schema === CreateWebhookInput ? "POST" : "PUT"} body: each rule refuses in zod and in the document`, () => {
    for (const [what, body, phrase] of refused) {
      const parsed = parseWith(schema, body);
      assert.deepEqual(parsed, { ok: false, phrase }, what);
      assert.equal(valid(body), false, `the document lets through: ${what}`);
    }
    for (const [what, body] of accepted) {
      assert.equal(parseWith(schema, body).ok, true, what);
      assert.equal(valid(body), true, `${what}: ${JSON.stringify(valid.errors)}`);
    }
  });
}

Deno.test("PATCH body: a schedule object excludes mailbox fields, in zod and in the document", () => {
  const valid = documented(PatchWebhookInput);
  const body = { schedule: { cron: "0 3 * * *" }, format: "slack" };
  assert.deepEqual(parseWith(PatchWebhookInput, body), {
    ok: false,
    phrase: "Invalid format: not allowed with schedule",
  });
  assert.equal(valid(body), false);
  for (
    const ok of [{ schedule: null, format: "slack" }, { schedule: { active: false } }, { format: "slack" }]
  ) {
    assert.equal(parseWith(PatchWebhookInput, ok).ok, true, JSON.stringify(ok));
    assert.equal(valid(ok), true, JSON.stringify(ok));
  }
});

Deno.test("PUT /token/settings: the alert webhook keeps a format's rules, in zod and in the document", () => {
  const valid = documented(SettingsInput);
  const cases: [Record<string, unknown>, string][] = [
    [
      { url: URL, format: "telegram" },
      'Invalid low_balance_webhook.options.chat_id: required for format "telegram"',
    ],
    [
      { url: URL, template: { a: 1 } },
      'Invalid low_balance_webhook.template: only allowed with format "custom"',
    ],
    [
      { url: URL, format: "pagerduty", options: { routing_key: "r", severity: "loud" } },
      'Invalid low_balance_webhook.options.severity "loud": must be one of critical, error, warning, info',
    ],
  ];
  for (const [webhook, phrase] of cases) {
    const body = { low_balance_threshold: 5, low_balance_webhook: webhook };
    assert.deepEqual(parseWith(SettingsInput, body), { ok: false, phrase });
    assert.equal(valid(body), false, phrase);
  }
  const ok = {
    low_balance_threshold: 5,
    low_balance_webhook: { url: URL, format: "telegram", options: { chat_id: "1" } },
  };
  assert.equal(parseWith(SettingsInput, ok).ok, true);
  assert.equal(valid(ok), true, JSON.stringify(valid.errors));
});

/** The description the document gives a field of the schedule, wherever the generator put it. */
function scheduleFieldDescription(schema: z.ZodType, field: "cron" | "timezone"): string {
  const json = JSON.stringify(documentedJson(schema, "").content["application/json"].schema);
  const described = new RegExp(`"${field}":\\{[^{}]*"description":"([^"]*)"`).exec(json);
  return described?.[1] ?? assert.fail(`${field} has no description`);
}

Deno.test("cron and timezone are rules of the schedule's schema, with validateSchedule's phrases", () => {
  const cases: [Record<string, string>, string][] = [
    [{ cron: "@daily" }, 'Invalid schedule.cron "@daily": @ macros are not supported, use "0 0 * * *"'],
    [
      { cron: "0 9 * *" },
      'Invalid schedule.cron "0 9 * *": must have 5 fields (minute hour day-of-month month day-of-week), found 4',
    ],
    [{ cron: "61 * * * *" }, 'Invalid schedule.cron "61 * * * *": minute must be 0-59'],
    [{ cron: "1".repeat(201) }, "Invalid schedule.cron: longer than 200 characters"],
    [{ timezone: "Mars/Olympus" }, 'Invalid schedule.timezone "Mars/Olympus": not an IANA time zone'],
    [{ timezone: "+02:00" }, 'Invalid schedule.timezone "+02:00": not an IANA time zone'],
  ];
  for (const [change, phrase] of cases) {
    const schedule = { ...CRON, ...change };
    for (const schema of [CreateWebhookInput, ReplaceWebhookInput]) {
      assert.deepEqual(parseWith(schema, { url: URL, schedule }), { ok: false, phrase }, phrase);
    }
    // A PATCH checks the fields it sends; the merge with the stored schedule is checked after.
    assert.deepEqual(parseWith(PatchWebhookInput, { schedule: change }), { ok: false, phrase }, phrase);
  }
  // Whether it fires again depends on the time of the request: not the schema's rule, but named.
  const never = { url: URL, schedule: { ...CRON, cron: "0 0 30 2 *" } };
  assert.equal(parseWith(CreateWebhookInput, never).ok, true);
  assert.equal(parseWith(PatchWebhookInput, { schedule: { timezone: "europe/rome" } }).ok, true);
  for (const schema of [CreateWebhookInput, PatchWebhookInput]) {
    assert.match(scheduleFieldDescription(schema, "cron"), /no `@` macros.*never fires again/);
    assert.match(scheduleFieldDescription(schema, "timezone"), /IANA time zone.*offsets.*`400`/);
  }
});
