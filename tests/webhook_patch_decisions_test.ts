// Given events / when a webhook is patched / then its decision: maps replaced whole, the schedule
// merged field by field, `schedule: null` back to a mailbox, the modes never mixed, the rules
// checked on what the patch leaves. No database.
import assert from "node:assert/strict";
import { newEvent } from "../events/catalogue.ts";
import type { WebhookConfigData } from "../projections/webhook_config_data.ts";
import {
  created,
  DAILY,
  FRESH,
  mailboxData,
  opened,
  patch,
  scheduledData,
  when,
} from "./helpers/webhook_spec.ts";

Deno.test("patch: only what is sent changes; maps are replaced whole", () => {
  const given = [
    ...opened(),
    created(
      mailboxData("p", {
        headers: { A: "1", B: "2" },
        format: "telegram",
        options: { chat_id: "42", x: "y" },
      }),
    ),
  ];
  const then = when(given, patch("p", { headers: { C: "3" }, options: { chat_id: "7" } }));
  assert.deepEqual(then.events, [newEvent("WebhookUpdated", {
    ...mailboxData("p"),
    headers: { C: "3" },
    format: "telegram",
    options: { chat_id: "7" },
  })]);
  assert.deepEqual([then.body.headers, then.body.options], [{ C: "***" }, { chat_id: "7" }]);
  const noChat = when(given, patch("p", { options: null }));
  assert.deepEqual([noChat.status, noChat.text, noChat.events], [
    400,
    'Invalid options.chat_id: required for format "telegram"',
    [],
  ]);
  assert.deepEqual(when(given, patch("nope", { url: "https://b.example/" })).status, 404);
});

Deno.test("patch: a schedule is merged field by field, and a schedule field is required to start one", () => {
  const given = [...opened(), created(scheduledData("job"))];
  const paused = when(given, patch("job", { schedule: { active: false } }));
  assert.deepEqual((paused.events[0].data as WebhookConfigData).schedule, { ...DAILY, active: false });
  assert.deepEqual([paused.body.schedule.active, paused.body.schedule.nextRunAt], [false, null]);
  const moved = when(given, patch("job", { schedule: { timezone: "Europe/Rome" } }));
  assert.deepEqual((moved.events[0].data as WebhookConfigData).schedule, {
    ...DAILY,
    timezone: "Europe/Rome",
  });
  assert.equal(moved.body.schedule.nextRunAt, "2027-03-02T08:00:00.000Z", "09:00 in Rome");

  const fromMailbox = [...opened(), created(mailboxData("m"))];
  const partial = when(fromMailbox, patch("m", { schedule: { timezone: "UTC" } }));
  assert.deepEqual([partial.status, partial.text], [400, "Invalid schedule.cron: required"]);
  const badCron = when(fromMailbox, patch("m", { schedule: { cron: "0 9 * *", timezone: "UTC" } }));
  assert.equal(badCron.status, 400);
  assert.match(badCron.text, /^Invalid schedule.cron/);
});

Deno.test("patch: schedule null goes back to a mailbox, with the old address or a new one", () => {
  const wasMailbox = [
    ...opened(),
    created(mailboxData("m", { format: "slack" })),
    newEvent("WebhookUpdated", scheduledData("m", { email: "r_m@mail.test" })),
  ];
  const back = when(wasMailbox, patch("m", { schedule: null }));
  assert.deepEqual(back.events, [newEvent("WebhookUpdated", mailboxData("m"))], "default mailbox settings");
  assert.equal(back.body.email, "r_m@mail.test");

  const bornScheduled = [...opened(), created(scheduledData("s"))];
  const born = when(bornScheduled, patch("s", { schedule: null, format: "discord" }));
  assert.deepEqual(born.events, [newEvent("WebhookUpdated", {
    ...mailboxData("s"),
    format: "discord",
    email: FRESH.mailboxAddress,
  })]);
  assert.equal(born.body.secret, undefined, "the signing key is not shown again");
});

Deno.test("patch: mailbox fields and a schedule never mix", () => {
  const scheduledHook = [...opened(), created(scheduledData("job"))];
  const field = when(scheduledHook, patch("job", { includeAttachments: true }));
  assert.deepEqual([field.status, field.text, field.events], [
    400,
    "Invalid includeAttachments: not allowed with schedule",
    [],
  ]);
  const mailboxHook = [...opened(), created(mailboxData("m"))];
  const both = when(
    mailboxHook,
    patch("m", { schedule: { cron: "0 9 * * 1", timezone: "UTC" }, format: "discord" }),
  );
  assert.deepEqual([both.status, both.text], [400, "Invalid format: not allowed with schedule"]);
});
