// The rules that refuse a webhook body live in its schema (issue 24 item 6): the zod schema refuses
// with the phrase the service has always answered, and the JSON Schema /openapi.json shows for the
// same body (documentedJson) refuses it too, checked here by an independent validator (Ajv, draft
// 2020-12, the dialect of OpenAPI 3.1). Valid bodies pass both.
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { z } from "zod";
import { CreateWebhookInput, PatchWebhookInput, ReplaceWebhookInput } from "../src/webhooks/config/input.ts";
import { parseWith } from "../src/calls/parsed.ts";
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
