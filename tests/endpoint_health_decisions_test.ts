// Given events / when an attempt, a PATCH, a mail or a delete / then what endpoint health decides
// (issue 13), without a database: the "failing" alert once per episode, the self-pause of a mailbox
// webhook (failures and hours) and of a schedule (failed runs), paused mail held, pausing and
// resuming by hand.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { decideBilled, decideUnbilled, NOW, WALLET } from "./helpers/decider.ts";
import { recordAttempt } from "../src/webhooks/attempt_record.ts";
import type { ClaimedDelivery } from "../src/webhooks/outbox.ts";
import type { AttemptResult } from "../src/webhooks/delivery_channel.ts";
import { FAILING_ALERT_AFTER, PAUSED_BY_ENDPOINT } from "../src/webhooks/endpoint_health.ts";
import { acceptEmailCommand, type EmailArrival } from "../src/email/commands.ts";
import { created, mailboxData, opened, patch, scheduledData, when } from "./helpers/webhook_spec.ts";
import { webhookCalls } from "../src/webhooks/calls.ts";

const HOUR = 3600_000;
const RULES = { pauseAfterFailures: 8, pauseAfterMs: 24 * HOUR };
const ALERT_IDS = { deliveryIds: ["dlv_a1", "dlv_a2"], messageIds: ["msg_a1", "msg_a2"] } as const;
const withAlerts = newEvent("LowBalanceSettingsChanged", {
  threshold: 0,
  webhook: { url: "https://alerts.example/", headers: {}, options: {} },
  email: "owner@example.com",
  secret: "whsec_alerts",
  // Alerts go to an email address only once confirmed (alert_settings_decisions_test.ts).
  emailConfirmed: true,
});
const failed: AttemptResult = { ok: false, status: 503, latencyMs: 9, retryable: true, error: "HTTP 503" };

function delivery(kind: "email" | "scheduled", webhookId: string, attempts = 0): ClaimedDelivery {
  return {
    kind,
    id: "dlv_1",
    walletId: WALLET,
    webhookId,
    messageId: "msg_1",
    cost: 2,
    payload: {},
    attempts,
    claimToken: "t1",
  } as ClaimedDelivery;
}

/** `count` earlier failed attempts of the webhook, the first at `first`. */
function failures(webhookId: string, count: number, first: Date, kind: "email" | "scheduled" = "email") {
  return Array.from({ length: count }, (_, i) =>
    newEvent("DeliveryAttempted", {
      attemptId: `a${i}`,
      deliveryId: `dlv_old${i}`,
      webhookId,
      kind,
      messageId: `msg_old${i}`,
      attempt: 1,
      ok: false,
      status: 503,
      error: "HTTP 503",
      latencyMs: 5,
      cost: 2,
      balance: 100,
      at: new Date(first.getTime() + i * 1000).toISOString(),
    }));
}

function attempt(given: NewEvent[], d: ClaimedDelivery, result: AttemptResult = failed) {
  const command = recordAttempt({
    delivery: d,
    result,
    logPath: d.webhookId!,
    attemptId: "a_now",
    at: NOW,
    retryScale: 1,
    rules: RULES,
    alertIds: { deliveryIds: [...ALERT_IDS.deliveryIds], messageIds: [...ALERT_IDS.messageIds] },
  });
  return decideUnbilled(given, command, { overrides: { held: true } });
}

const types = (events?: NewEvent[]) => events?.map((e) => e.type) ?? [];
const effectTypes = (effects?: { type: string }[]) => effects?.map((e) => e.type) ?? [];

Deno.test("the fifth failure in a row sends one failing alert to each target, once per episode", () => {
  const given = [...opened(), withAlerts, created(mailboxData("inbox"))];
  const fifth = attempt(
    [...given, ...failures("inbox", FAILING_ALERT_AFTER - 1, NOW)],
    delivery("email", "inbox"),
  );
  assert.deepEqual(types(fifth.events), ["DeliveryAttempted", "WebhookFailing"]);
  const failing = fifth.events![1] as Extract<NewEvent, { type: "WebhookFailing" }>;
  assert.deepEqual(failing.data, {
    webhookId: "inbox",
    failures: 5,
    since: NOW.toISOString(),
    lastStatus: 503,
    lastError: "HTTP 503",
  });
  const alerts = fifth.effects!.filter((e) => e.type === "queueDelivery") as any[];
  assert.deepEqual(alerts.map((e) => [e.delivery.kind, e.delivery.id, e.delivery.cost]), [
    ["alert_webhook", "dlv_a1", 0],
    ["alert_email", "dlv_a2", 0],
  ]);
  assert.equal(alerts[0].delivery.payload.type, "webhook.failing");
  assert.deepEqual(effectTypes(fifth.effects)[0], "rescheduleDelivery", "the delivery is retried as usual");

  const sixth = attempt(
    [...given, ...failures("inbox", 5, NOW), newEvent("WebhookFailing", failing.data)],
    delivery("email", "inbox"),
  );
  assert.deepEqual(types(sixth.events), ["DeliveryAttempted"], "no second alert in the episode");
});

Deno.test("a success ends the episode: the next streak alerts again; no targets, no alert deliveries", () => {
  const ok = newEvent("DeliveryAttempted", {
    ...(failures("inbox", 1, NOW)[0].data as any),
    ok: true,
    status: 200,
    error: undefined,
  });
  const given = [
    ...opened(),
    created(mailboxData("inbox")),
    ...failures("inbox", 5, NOW),
    newEvent("WebhookFailing", { webhookId: "inbox", failures: 5, since: NOW.toISOString() }),
    ok,
    ...failures("inbox", 4, NOW),
  ];
  const again = attempt(given, delivery("email", "inbox"));
  assert.deepEqual(types(again.events), ["DeliveryAttempted", "WebhookFailing"]);
  assert.deepEqual(effectTypes(again.effects), ["rescheduleDelivery"], "no alert target configured");
});

Deno.test("a mailbox webhook pauses itself only when both the failures and the hours are reached", () => {
  const given = [...opened(), withAlerts, created(mailboxData("inbox"))];
  const recent = attempt(
    [...given, ...failures("inbox", 7, new Date(NOW.getTime() - HOUR))],
    delivery("email", "inbox"),
  );
  assert.deepEqual(types(recent.events), ["DeliveryAttempted", "WebhookFailing"], "8 failures, but 1 hour");

  const since = new Date(NOW.getTime() - 25 * HOUR);
  const paused = attempt([...given, ...failures("inbox", 7, since)], delivery("email", "inbox", 2));
  assert.deepEqual(types(paused.events), ["DeliveryAttempted", "WebhookPaused"]);
  const attempted = paused.events![0] as Extract<NewEvent, { type: "DeliveryAttempted" }>;
  assert.deepEqual([attempted.data.held, attempted.data.nextAttemptAt], [true, undefined], "it waits too");
  assert.deepEqual((paused.events![1] as any).data, {
    webhookId: "inbox",
    reason: PAUSED_BY_ENDPOINT,
    failures: 8,
    since: since.toISOString(),
    lastStatus: 503,
    lastError: "HTTP 503",
  });
  const [moved, hold, ...alerts] = paused.effects as any[];
  assert.deepEqual([moved.type, moved.at], ["rescheduleDelivery", null]);
  assert.deepEqual(hold, { type: "holdWebhookDeliveries", walletId: WALLET, webhookId: "inbox", hold: true });
  assert.deepEqual(alerts.map((a) => [a.delivery.kind, a.delivery.payload.type]), [
    ["alert_webhook", "webhook.paused"],
    ["alert_email", "webhook.paused"],
  ]);
});

Deno.test("a paused webhook's failed email waits for the resume; its health decides nothing more", () => {
  const given = [
    ...opened(),
    created(mailboxData("inbox")),
    newEvent("WebhookPaused", { webhookId: "inbox", reason: "paused by owner" }),
  ];
  const held = attempt(given, delivery("email", "inbox", 1));
  assert.deepEqual(types(held.events), ["DeliveryAttempted"]);
  assert.deepEqual((held.effects as any[]).map((e) => [e.type, e.at]), [["rescheduleDelivery", null]]);
  const lastTry = attempt(given, delivery("email", "inbox", 6));
  assert.deepEqual(types(lastTry.events), ["DeliveryAttempted", "DeliveryAbandoned"], "out of attempts");
  assert.equal((lastTry.events![1] as any).data.cause, "retries exhausted");
});

Deno.test("a scheduled webhook turns its schedule inactive after N failed runs, whatever their age", () => {
  const given = [...opened(), withAlerts, created(scheduledData("job"))];
  const eighth = attempt([...given, ...failures("job", 7, NOW, "scheduled")], delivery("scheduled", "job"));
  assert.deepEqual(types(eighth.events), [
    "DeliveryAttempted",
    "DeliveryAbandoned",
    "WebhookUpdated",
    "WebhookPaused",
  ]);
  const updated = eighth.events![2] as Extract<NewEvent, { type: "WebhookUpdated" }>;
  assert.deepEqual(updated.data.schedule, { cron: "0 9 * * *", timezone: "UTC", active: false });
  assert.equal((eighth.events![1] as any).data.cause, "not retried");
  const alert = (eighth.effects as any[]).find((e) => e.type === "queueDelivery");
  assert.equal(alert.delivery.payload.resume, 'PATCH /webhook/job with {"schedule": {"active": true}}');
  assert.ok(!effectTypes(eighth.effects).includes("holdWebhookDeliveries"), "runs are not held");
});

Deno.test("PATCH active: pause by the owner, idempotent, resume; refused on a schedule", () => {
  const given = [...opened(), created(mailboxData("inbox"))];
  const pause = when(given, patch("inbox", { active: false }));
  assert.deepEqual([pause.status, pause.body.active, pause.body.pausedReason], [
    200,
    false,
    "paused by owner",
  ]);
  assert.equal(pause.body.pausedAt, NOW.toISOString());
  assert.deepEqual(pause.events, [
    newEvent("WebhookPaused", { webhookId: "inbox", reason: "paused by owner" }),
  ]);
  assert.deepEqual(pause.call.effects, [
    { type: "holdWebhookDeliveries", walletId: WALLET, webhookId: "inbox", hold: true },
  ]);
  const paused = [...given, ...pause.events];
  assert.deepEqual(when(paused, patch("inbox", { active: false })).events, [], "already paused");
  const url = when(paused, patch("inbox", { url: "https://hooks.example/other" }));
  assert.deepEqual(
    [types(url.events), url.body.active],
    [["WebhookUpdated"], false],
    "an edit keeps the pause",
  );
  const resume = when(paused, patch("inbox", { active: true }));
  assert.deepEqual([resume.body.active, resume.body.pausedReason, types(resume.events)], [
    true,
    undefined,
    ["WebhookResumed"],
  ]);
  assert.deepEqual((resume.call.effects as any[]).map((e) => e.hold), [false]);
  const job = when([...opened(), created(scheduledData("job"))], patch("job", { active: true }));
  assert.deepEqual([job.status, job.text, job.events], [
    400,
    "Invalid active: a scheduled webhook pauses with schedule.active",
    [],
  ]);
});

Deno.test("a schedule the service paused resumes when made active; deleting a paused webhook frees its mail", () => {
  const pausedJob = [
    ...opened(),
    created(scheduledData("job", { schedule: { cron: "0 9 * * *", timezone: "UTC", active: false } })),
    newEvent("WebhookPaused", { webhookId: "job", reason: PAUSED_BY_ENDPOINT }),
  ];
  const shown = when(pausedJob, patch("job", { url: "https://hooks.example/x" }));
  assert.equal(shown.body.pausedReason, PAUSED_BY_ENDPOINT, "still paused while inactive");
  const resumed = when(pausedJob, patch("job", { schedule: { active: true } }));
  assert.deepEqual([types(resumed.events), resumed.body.pausedReason], [
    ["WebhookUpdated", "WebhookResumed"],
    undefined,
  ]);
  const inbox = [
    ...opened(),
    created(mailboxData("inbox")),
    newEvent("WebhookPaused", { webhookId: "inbox", reason: "paused by owner" }),
  ];
  const deleted = when(inbox, webhookCalls.delete({ walletId: WALLET, webhookId: "inbox" }));
  assert.deepEqual(deleted.call.effects, [
    { type: "holdWebhookDeliveries", walletId: WALLET, webhookId: "inbox", hold: false },
  ]);
});

Deno.test("mail to a paused mailbox webhook is accepted and charged; its delivery is held", () => {
  const arrival: EmailArrival = {
    email: {
      messageId: "<m@x>",
      from: { email: "a@x.example", name: "A" },
      cc: [],
      subject: "S",
      text: "T",
      html: "",
      attachments: [],
      truncated: false,
    } as never,
    recipient: "r_inbox@mail.test",
    mailbox: { walletId: WALLET, webhookId: "inbox", includeAttachments: true },
    receivedAt: NOW,
    size: 10,
    startedAt: 0,
    ids: { deliveryId: "dlv_m", messageId: "msg_m", attachmentIds: [] },
  };
  const given = [...opened(), created(mailboxData("inbox"))];
  const pause = newEvent("WebhookPaused", { webhookId: "inbox", reason: "paused by owner" });
  const call = decideBilled([...given, pause], acceptEmailCommand(arrival)).call();
  assert.deepEqual([call.outcome, call.charge], ["accepted", 2]);
  assert.deepEqual((call.effects as any[]).map((e) => [e.type, e.held]), [["queueDelivery", true]]);
  assert.equal((call.events![0] as any).data.webhookMessageId, "msg_m");
  const sending = decideBilled(given, acceptEmailCommand(arrival)).call();
  assert.deepEqual((sending.effects as any[]).map((e) => e.held), [undefined]);
});
