// Given events / when a webhook command / then its decision: the registry's rules without a
// database. Create, replace, delete, get and list decide from the wallet's webhooks and schedules as
// the events leave them, the time and the values drawn before the command (patch: its own file).
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { decideBilled, NOW, WALLET } from "./helpers/decider.ts";
import { webhookCalls } from "../src/webhooks/calls.ts";
import type { WebhookConfigData } from "../projections/webhook_config_data.ts";
import { WebhookList, WebhookView } from "../src/webhooks/config/view.ts";
import {
  create,
  created,
  DAILY,
  FRESH,
  mailbox,
  mailboxData,
  opened,
  patch,
  scheduled,
  scheduledData,
  webhookCommand,
  when,
} from "./helpers/webhook_spec.ts";

Deno.test("create: a new mailbox webhook is WebhookCreated, and the answer shows its secret once", () => {
  const settings = mailbox({ format: "slack" });
  const then = when(opened(), create("inbox", settings));
  assert.deepEqual([then.status, then.call.log, then.call.charge], [200, { status: 200 }, undefined]);
  assert.deepEqual(then.events, [created({
    webhookId: "inbox",
    url: "https://hooks.example/new",
    headers: {},
    format: "slack",
    options: {},
    includeAttachments: true,
    email: FRESH.mailboxAddress,
    secret: FRESH.secret,
    createdAt: NOW.toISOString(),
  })]);
  assert.deepEqual(then.body, {
    webhookId: "inbox",
    webhook: "https://hooks.example/new",
    headers: {},
    hash: WALLET,
    email: FRESH.mailboxAddress,
    format: "slack",
    options: {},
    includeAttachments: true,
    active: true,
    secret: FRESH.secret,
  });
});

Deno.test("create: a scheduled webhook has no mailbox, and its next run in the answer", () => {
  const then = when(opened(), create("job", scheduled()));
  assert.deepEqual(then.events, [created({
    webhookId: "job",
    url: "https://hooks.example/new",
    headers: {},
    schedule: DAILY,
    secret: FRESH.secret,
    createdAt: NOW.toISOString(),
  })]);
  assert.deepEqual(then.body.schedule, {
    ...DAILY,
    nextRunAt: "2027-03-02T09:00:00.000Z",
    lastRunAt: null,
    lastStatus: null,
    lastError: null,
  });
  assert.equal(then.body.email, undefined);
});

Deno.test("create: an explicit webhookId that exists is 409, charged, with no event", () => {
  const given = [...opened(), created(mailboxData("inbox"))];
  const then = when(given, create("inbox"));
  assert.deepEqual([then.status, then.text, then.call.charge], [
    409,
    'Webhook "inbox" already exists',
    undefined,
  ]);
  assert.deepEqual(then.events, []);
});

Deno.test("create without webhookId replaces `default`: same mailbox, secret and creation time, secret not shown", () => {
  const given = [...opened(), created(mailboxData("default", { headers: { A: "1" } }))];
  const then = when(given, create(undefined, mailbox({ format: "discord" })));
  assert.deepEqual(then.events, [newEvent("WebhookUpdated", {
    ...mailboxData("default"),
    url: "https://hooks.example/new",
    format: "discord",
  })]);
  assert.equal(then.body.secret, undefined);
  assert.equal(then.body.email, "r_default@mail.test");
});

Deno.test("create: at most 100 webhooks per wallet, yet `default` is still replaced at the limit", () => {
  const hundred = Array.from({ length: 100 }, (_, i) => created(mailboxData(i === 0 ? "default" : `w${i}`)));
  const given = [...opened(), ...hundred];
  const refused = when(given, create("one-more"));
  assert.deepEqual([refused.status, refused.text], [400, "Too many webhooks: at most 100 per wallet"]);
  assert.deepEqual(refused.events, []);
  const upsert = when(given, create());
  assert.deepEqual(upsert.events.map((e) => e.type), ["WebhookUpdated"]);
  const ninetyNine = when(given.slice(0, -1), create("last"));
  assert.deepEqual(ninetyNine.events.map((e) => e.type), ["WebhookCreated"]);
});

Deno.test("create: creation times strictly increase, even when the newest is not before now", () => {
  const createdAt = (given: NewEvent[]) =>
    (when(given, create("next")).events[0].data as WebhookConfigData).createdAt;
  const at = (ms: number) => new Date(NOW.getTime() + ms).toISOString();
  assert.equal(
    createdAt([...opened(), created(mailboxData("old"))]),
    NOW.toISOString(),
    "after older ones: now",
  );
  assert.equal(createdAt([...opened(), created(mailboxData("same", { createdAt: at(0) }))]), at(1));
  assert.equal(
    createdAt([
      ...opened(),
      created(mailboxData("a", { createdAt: at(5) })),
      created(mailboxData("b", { createdAt: at(2) })),
    ]),
    at(6),
    "one past the newest, whatever the order of the events",
  );
});

Deno.test("replace: 404 for an unknown id; otherwise the whole settings, with identity and address kept", () => {
  const given = [...opened(), created(mailboxData("w", { headers: { A: "1" }, format: "slack" }))];
  const missing = when(
    given,
    webhookCalls.replace({ walletId: WALLET, webhookId: "nope", settings: mailbox(), fresh: FRESH }),
  );
  assert.deepEqual([missing.status, missing.text, missing.events], [404, "Webhook not found", []]);

  const toScheduled = when(
    given,
    webhookCalls.replace({ walletId: WALLET, webhookId: "w", settings: scheduled(), fresh: FRESH }),
  );
  assert.deepEqual(toScheduled.events, [newEvent("WebhookUpdated", {
    ...scheduledData("w"),
    url: "https://hooks.example/new",
    email: "r_w@mail.test",
  })], "a scheduled webhook keeps its address in the event");
  assert.deepEqual(Object.keys(toScheduled.body).sort(), [
    "hash",
    "headers",
    "schedule",
    "webhook",
    "webhookId",
  ]);

  const back = when(
    [...given, ...toScheduled.events],
    webhookCalls.replace({ walletId: WALLET, webhookId: "w", settings: mailbox(), fresh: FRESH }),
  );
  assert.deepEqual(back.events, [
    newEvent("WebhookUpdated", { ...mailboxData("w"), url: "https://hooks.example/new" }),
  ]);
});

Deno.test("delete: 404 for an unknown webhook; otherwise WebhookDeleted", () => {
  const given = [...opened(), created(mailboxData("gone"))];
  const missing = when(given, webhookCalls.delete({ walletId: WALLET, webhookId: "nope" }));
  assert.deepEqual([missing.status, missing.text, missing.events], [404, "Webhook not found", []]);
  const deleted = when(given, webhookCalls.delete({ walletId: WALLET, webhookId: "gone" }));
  assert.deepEqual([deleted.status, deleted.text], [200, "OK"]);
  assert.deepEqual(deleted.events, [newEvent("WebhookDeleted", { webhookId: "gone" })]);
  const afterwards = when(
    [...given, ...deleted.events],
    webhookCalls.get({ walletId: WALLET, webhookId: "gone" }),
  );
  assert.equal(afterwards.status, 404);
});

Deno.test("get: header values and sensitive options redacted, no secret; 404 for an unknown id", () => {
  const given = [
    ...opened(),
    created(mailboxData("pd", {
      headers: { Authorization: "Bearer x" },
      format: "pagerduty",
      options: { routing_key: "rk", severity: "info", api_token: "t" },
    })),
  ];
  const then = when(given, webhookCalls.get({ walletId: WALLET, webhookId: "pd" }));
  assert.deepEqual(then.body, {
    webhookId: "pd",
    webhook: "https://hooks.example/pd",
    headers: { Authorization: "***" },
    hash: WALLET,
    email: "r_pd@mail.test",
    format: "pagerduty",
    options: { routing_key: "***", severity: "info", api_token: "***" },
    includeAttachments: true,
    active: true,
  });
  assert.deepEqual(then.events, []);
  assert.deepEqual([when(given, webhookCalls.get({ walletId: WALLET, webhookId: "nope" })).text], [
    "Webhook not found",
  ]);
});

Deno.test("get: a scheduled webhook shows the schedule model's next run and last run", () => {
  const given = [
    ...opened(),
    created(scheduledData("job")),
    newEvent("ScheduleRunFailed", {
      webhookId: "job",
      plannedAt: "2027-03-01T09:00:00.000Z",
      executedAt: "2027-03-01T09:00:01.000Z",
      error: "Insufficient credits",
      nextRunAt: "2027-03-02T09:00:00.000Z",
    }),
  ];
  assert.deepEqual(when(given, webhookCalls.get({ walletId: WALLET, webhookId: "job" })).body.schedule, {
    ...DAILY,
    nextRunAt: "2027-03-02T09:00:00.000Z",
    lastRunAt: "2027-03-01T09:00:01.000Z",
    lastStatus: "failure",
    lastError: "Insufficient credits",
  });
});

Deno.test("list: every webhook in creation order, [] when none", () => {
  assert.deepEqual(when(opened(), webhookCalls.list({ walletId: WALLET })).body, { webhooks: [] });
  const given = [
    ...opened(),
    created(mailboxData("b", { createdAt: "2027-02-02T00:00:00.000Z" })),
    created(scheduledData("c", { createdAt: "2027-02-03T00:00:00.000Z" })),
    created(mailboxData("a", { createdAt: "2027-02-04T00:00:00.000Z", headers: { K: "v" } })),
  ];
  const then = when(given, webhookCalls.list({ walletId: WALLET }));
  assert.deepEqual(then.body.webhooks.map((w: { webhookId: string }) => w.webhookId), ["b", "c", "a"]);
  assert.deepEqual(then.body.webhooks[2].headers, { K: "***" });
  assert.ok(then.body.webhooks.every((w: { secret?: string }) => w.secret === undefined));
});

Deno.test("an empty wallet: 402 from unpaid, nothing created", () => {
  const when402 = decideBilled(
    opened(0),
    webhookCommand(create("x")),
  ).call();
  assert.deepEqual([when402.outcome.status, when402.events, when402.charge], [402, undefined, undefined]);
});

Deno.test("test: a sent test answers 200 either way; one not sent is 404, or a retry hint when raced", () => {
  const failed = when(
    opened(),
    webhookCalls.testSent({ result: { success: false, message: "webhook call failed: HTTP 500" } }),
  );
  assert.deepEqual([failed.status, failed.call.log], [200, {
    status: 200,
    error: "webhook call failed: HTTP 500",
  }]);
  const sent = when(
    opened(),
    webhookCalls.testSent({ result: { success: true, message: "test webhook delivered" } }),
  );
  assert.deepEqual([sent.body, sent.call.log], [{ success: true, message: "test webhook delivered" }, {
    status: 200,
  }]);
  assert.equal(
    when(opened(), webhookCalls.testNotSent({ walletId: WALLET, webhookId: "default" })).status,
    404,
  );
  const raced = when(
    [...opened(), created(mailboxData("default"))],
    webhookCalls.testNotSent({ walletId: WALLET, webhookId: "default" }),
  );
  assert.deepEqual([raced.status, raced.body.success], [200, false]);
});

Deno.test("every answer is the webhook object /openapi.json documents, exactly", () => {
  const given = [
    ...opened(),
    created(mailboxData("m", { format: "custom", template: { t: "{{subject}}" }, options: { k: "v" } })),
    created(scheduledData("s")),
  ];
  const answers = [
    when(given, create("new")).body,
    when(given, create("job", scheduled())).body,
    when(given, webhookCalls.get({ walletId: WALLET, webhookId: "m" })).body,
    when(given, patch("s", { schedule: { active: false } })).body,
  ];
  for (const answer of answers) assert.deepEqual(WebhookView.parse(answer), answer);
  const list = when(given, webhookCalls.list({ walletId: WALLET })).body;
  assert.deepEqual(WebhookList.parse(list), list);
  assert.throws(
    () => WebhookView.parse({ ...answers[2], schedule: answers[1].schedule }),
    "never both modes",
  );
});
