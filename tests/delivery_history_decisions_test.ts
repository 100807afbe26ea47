// The delivery history without a database (issue 13): the folds of the history and of endpoint
// health, given events / when a retry, a recover or a page / then the decision, the answer's
// excerpt, and how an endpoint alert renders in each alert format.
import assert from "node:assert/strict";
import { type NewEvent, newEvent, type StoredEvent } from "../events/catalogue.ts";
import { commandOfCall, decideBilled, NOW, stream, WALLET } from "./helpers/decider.ts";
import { type DeliveryHistoryRow, evolveDelivery } from "../projections/delivery_history.ts";
import { evolveHealth, type WebhookHealthRow } from "../projections/webhook_health.ts";
import type { DeliveryDetail } from "../projections/delivery_history_reads.ts";
import { cursorAfter, parseCursor } from "../src/webhooks/deliveries/view.ts";
import { excerptOf } from "../src/webhooks/http_post.ts";
import { endpointAlert } from "../src/webhooks/endpoint_alert.ts";
import { renderAlert } from "../src/alerts/format.ts";
import type { ReadSet } from "../src/ledger/reads.ts";
import { created, mailboxData, opened, scheduledData } from "./helpers/webhook_spec.ts";
import { webhookCalls } from "../src/webhooks/calls.ts";
import type { BilledCall } from "../src/calls/billed_call.ts";

const received = newEvent("EmailReceived", {
  deliveryId: "dlv_1",
  webhookId: "inbox",
  recipient: "r_inbox@mail.test",
  messageId: "<m@x>",
  from: "a@x.example",
  subject: "S",
  size: 10,
  attachments: [],
  truncated: false,
  webhookMessageId: "msg_1",
});

function attempted(n: number, ok: boolean, more: Record<string, unknown> = {}): NewEvent {
  return newEvent("DeliveryAttempted", {
    attemptId: `a${n}`,
    deliveryId: "dlv_1",
    webhookId: "inbox",
    kind: "email",
    messageId: "msg_1",
    attempt: n,
    ok,
    status: ok ? 200 : 503,
    ...(ok ? {} : { error: "HTTP 503" }),
    latencyMs: 7,
    cost: n === 1 ? 2 : 0,
    balance: 90,
    ...more,
  });
}

/** The history row after each event. */
function fold(events: NewEvent[]): (DeliveryHistoryRow | undefined)[] {
  let row: DeliveryHistoryRow | undefined;
  return stream(events).map((event: StoredEvent) => row = evolveDelivery(row, event));
}

Deno.test("history fold: pending, retried, held, abandoned, requeued, delivered", () => {
  const events = [
    received,
    attempted(1, false, { nextAttemptAt: "2027-03-01T12:00:05.000Z" }),
    attempted(2, false, { held: true }),
    attempted(7, false),
    newEvent("DeliveryAbandoned", {
      deliveryId: "dlv_1",
      webhookId: "inbox",
      kind: "email",
      attempts: 7,
      reason: "gave up after 7 attempts: HTTP 503",
      cause: "retries exhausted",
    }),
    newEvent("DeliveryRequeued", {
      deliveryId: "dlv_1",
      webhookId: "inbox",
      messageId: "msg_1",
      reason: "retry",
    }),
    attempted(8, true),
  ];
  const rows = fold(events);
  const requeuedAt = stream(events)[5].recordedAt.toISOString();
  assert.deepEqual(
    rows.map((r) => [r!.status, r!.next_attempt_at?.toISOString() ?? null, r!.attempts.length]),
    [
      ["pending", rows[0]!.created_at.toISOString(), 0],
      ["pending", "2027-03-01T12:00:05.000Z", 1],
      ["pending", null, 2],
      ["failed", null, 3],
      ["abandoned", null, 3],
      ["pending", requeuedAt, 3],
      ["delivered", null, 4],
    ],
  );
  assert.deepEqual(rows[6]!.attempts[3], {
    attemptId: "a8",
    at: rows[6]!.attempts[3].at,
    statusCode: 200,
    latencyMs: 7,
    error: null,
  });
  assert.deepEqual([rows[0]!.kind, rows[0]!.message_id, rows[0]!.webhook_id], ["email", "msg_1", "inbox"]);
  assert.equal(rows[0]!.expires_at.getTime() - rows[0]!.created_at.getTime(), 7 * 86400_000, "kept 7 days");
});

Deno.test("history fold: a final answer is failed; older abandons tell by their reason; alerts and tests", () => {
  const abandon = (reason: string) =>
    newEvent("DeliveryAbandoned", {
      deliveryId: "dlv_1",
      webhookId: "inbox",
      kind: "email",
      attempts: 1,
      reason,
    });
  assert.equal(
    fold([received, attempted(1, false), abandon("final failure: HTTP 404")]).at(-1)!.status,
    "failed",
  );
  assert.equal(fold([received, abandon("gave up after 7 attempts: x")]).at(-1)!.status, "abandoned");
  assert.equal(fold([received, abandon("webhook deleted")]).at(-1)!.status, "abandoned");
  const alert = newEvent("DeliveryAttempted", { ...(attempted(1, true).data as any), kind: "alert" });
  assert.deepEqual(fold([alert]), [undefined], "alerts have no history row");
  const [test] = fold([newEvent("WebhookTested", {
    deliveryId: "dlv_t",
    webhookId: "inbox",
    messageId: "test_1",
    at: NOW.toISOString(),
    ok: false,
    status: 500,
    error: "HTTP 500",
    latencyMs: 3,
  })]);
  assert.deepEqual([test!.kind, test!.status, test!.message_id, test!.attempts.length], [
    "test",
    "failed",
    "test_1",
    1,
  ]);
});

Deno.test("health fold: a streak counts failures from the first, a success or a resume ends it", () => {
  let row: WebhookHealthRow | undefined;
  const rows = stream([
    created(mailboxData("inbox")),
    attempted(1, false, { at: "2027-03-01T10:00:00.000Z" }),
    attempted(2, false),
    newEvent("WebhookFailing", { webhookId: "inbox", failures: 2, since: "2027-03-01T10:00:00.000Z" }),
    newEvent("WebhookPaused", { webhookId: "inbox", reason: "endpoint failing" }),
    newEvent("WebhookResumed", { webhookId: "inbox" }),
    attempted(3, false),
    attempted(4, true),
  ]).map((event) => row = evolveHealth(row, event)!);
  assert.deepEqual(rows.map((r) => [r.failures, r.failing_alerted, r.paused_reason]), [
    [0, false, null],
    [1, false, null],
    [2, false, null],
    [2, true, null],
    [2, true, "endpoint failing"],
    [0, false, null],
    [1, false, null],
    [0, false, null],
  ]);
  assert.equal(rows[2].failing_since?.toISOString(), "2027-03-01T10:00:00.000Z");
});

/** The command a webhook call makes, as its route makes it. */
function command<R extends ReadSet>(call: BilledCall<R>) {
  return commandOfCall(call, {
    method: "POST",
    path: "/webhook/inbox/deliveries/x/retry",
    endpoint: "webhook",
  });
}

function detail(events: NewEvent[], more: Partial<DeliveryDetail> = {}): DeliveryDetail {
  return {
    row: fold(events).at(-1)!,
    status: "abandoned",
    excerpts: new Map(),
    sentBody: "{}",
    kept: true,
    ...more,
  };
}

function retry(given: NewEvent[], found: DeliveryDetail | undefined) {
  const retried = webhookCalls.retry({ walletId: WALLET, webhookId: "inbox", deliveryId: "msg_1" });
  const call = decideBilled(given, command(retried), { overrides: { delivery: found } }).call();
  return {
    call,
    body: call.outcome.contentType === "application/json" ? JSON.parse(call.outcome.body) : undefined,
  };
}

Deno.test("retry: 404s, a test is 409, else one more attempt now (at the resume when paused)", () => {
  const given = [...opened(), created(mailboxData("inbox"))];
  const abandoned = detail([received]);
  assert.equal(retry(opened(), abandoned).call.outcome.body, "Webhook not found");
  assert.equal(retry(given, undefined).call.outcome.body, "Delivery not found");
  assert.equal(retry(given, { ...abandoned, kept: false }).call.outcome.status, 404, "its payload is gone");
  const test = detail([newEvent("WebhookTested", {
    deliveryId: "dlv_t",
    webhookId: "inbox",
    messageId: "test_1",
    at: NOW.toISOString(),
    ok: true,
    latencyMs: 1,
  })]);
  assert.equal(retry(given, test).call.outcome.status, 409);

  const sent = retry(given, abandoned);
  assert.deepEqual([sent.body.status, sent.body.nextAttemptAt, sent.body.deliveryId], [
    "pending",
    NOW.toISOString(),
    "msg_1",
  ]);
  assert.deepEqual(sent.call.events, [
    newEvent("DeliveryRequeued", {
      deliveryId: "dlv_1",
      webhookId: "inbox",
      messageId: "msg_1",
      reason: "retry",
    }),
  ]);
  assert.deepEqual(sent.call.effects, [{
    type: "requeueDelivery",
    walletId: WALLET,
    deliveryId: "dlv_1",
    held: false,
  }]);
  assert.equal(sent.call.charge, undefined, "the call's price, 1: the email is not charged again");

  const paused = retry([
    ...given,
    newEvent("WebhookPaused", { webhookId: "inbox", reason: "paused by owner" }),
  ], abandoned);
  assert.deepEqual([paused.body.status, paused.body.nextAttemptAt], ["paused", null]);
  assert.equal((paused.call.effects![0] as any).held, true);
});

Deno.test("recover: the window's rules, then every failed delivery of it queued again", () => {
  const given = [...opened(), created(scheduledData("inbox"))];
  const recover = (since: string, until: string | undefined, failed: DeliveryDetail[] = []) => {
    const request = { walletId: WALLET, webhookId: "inbox", since, ...(until ? { until } : {}) };
    return decideBilled(given, command(webhookCalls.recover({ request, now: NOW })), {
      overrides: { failed },
    }).call();
  };
  const day = 86400_000;
  const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString();
  assert.equal(
    recover(ago(7 * day + 1000), undefined).outcome.body,
    `Invalid since "${ago(7 * day + 1000)}": must be at most 7 days ago`,
  );
  assert.match(recover(ago(day), ago(2 * day)).outcome.body, /^Invalid until ".*": must be after since$/);
  assert.match(recover(ago(-1000), undefined).outcome.body, /^Invalid since ".*": must be in the past$/);
  const two = [
    detail([received]),
    detail([{ ...received, data: { ...received.data, deliveryId: "dlv_2" } } as NewEvent]),
  ];
  const done = recover(ago(day), undefined, two);
  assert.deepEqual(JSON.parse(done.outcome.body), { queued: 2 });
  assert.deepEqual(done.events?.map((e: any) => [e.type, e.data.deliveryId, e.data.reason]), [
    ["DeliveryRequeued", "dlv_1", "recover"],
    ["DeliveryRequeued", "dlv_2", "recover"],
  ]);
  assert.deepEqual(done.effects?.map((e: any) => [e.deliveryId, e.held]), [["dlv_1", false], [
    "dlv_2",
    false,
  ]]);
});

Deno.test("a page: newest first as read, a cursor when there is one more, cursors round-trip", () => {
  const given = [...opened(), created(mailboxData("inbox"))];
  const records = [3, 2, 1].map((n) =>
    detail([{ ...received, data: { ...received.data, deliveryId: `dlv_${n}` } } as NewEvent])
  );
  const request = { walletId: WALLET, webhookId: "inbox", limit: 2 };
  const page = (found: DeliveryDetail[]) =>
    JSON.parse(
      decideBilled(given, command(webhookCalls.deliveries(request)), {
        overrides: { page: found },
      }).call().outcome.body,
    );
  const first = page(records);
  assert.equal(first.deliveries.length, 2);
  assert.equal(first.nextCursor, cursorAfter(records[1]));
  assert.deepEqual(parseCursor(first.nextCursor), {
    ok: true,
    value: { createdAt: records[1].row.created_at.toISOString(), deliveryId: "dlv_2" },
  });
  assert.equal(page(records.slice(0, 2)).nextCursor, null);
  assert.equal(parseCursor("bm90IGpzb24").ok, false);
});

Deno.test("an excerpt is at most the bytes read, a character cut at the end dropped", () => {
  const bytes = new TextEncoder().encode("ok é");
  assert.deepEqual(excerptOf(bytes), { excerpt: "ok é" });
  assert.deepEqual(excerptOf(bytes.subarray(0, 4)), { excerpt: "ok " }, "half of é");
  assert.deepEqual(excerptOf(new Uint8Array()), {});
});

Deno.test("an endpoint alert in each alert format", () => {
  const alert = {
    kind: "endpoint" as const,
    payload: endpointAlert({
      type: "webhook.failing",
      walletId: WALLET,
      webhookId: "inbox",
      scheduled: false,
      failures: 5,
      since: NOW,
      lastStatus: 503,
      lastError: "HTTP 503 Service Unavailable",
    }),
  };
  const render = (settings: Record<string, unknown>) => renderAlert(alert, settings, NOW) as any;
  assert.deepEqual(render({}), alert.payload, "no format: the payload as is");
  assert.match(
    render({ format: "slack" }).text,
    /^\*Webhook inbox is failing\*\n.*\n\nThe last 5 attempts to webhook/s,
  );
  assert.match(render({ format: "discord" }).content, /^\*\*Webhook inbox is failing\*\*/);
  assert.equal(
    render({ format: "teams" }).attachments[0].contentType,
    "application/vnd.microsoft.card.adaptive",
  );
  assert.match(
    render({ format: "telegram", options: { chat_id: "7" } }).text,
    /<b>Webhook inbox is failing<\/b>/,
  );
  const pd = render({ format: "pagerduty", options: { routing_key: "rk" } });
  assert.deepEqual([pd.dedup_key, pd.payload.summary], ["webhook.failing-inbox", "Webhook inbox is failing"]);
  assert.deepEqual(
    render({ format: "custom", template: { say: "{{text}}", hook: "{{webhookId}}", n: "{{failures}}" } }),
    {
      say: alert.payload.text,
      hook: "inbox",
      n: 5,
    },
  );
});
