// Given events / when POST /webhook/<id>/recover / then its decision (issue 21), without a
// database: a recover that queues deliveries makes the webhook's next one wait the interval; within
// it a recover with deliveries to queue gets 429 with Retry-After, charged like any refusal and
// queueing nothing; one with nothing to queue answers { queued: 0 }; once the interval is over the
// next recover queues again. The wait is folded from the DeliveryRequeued that carries it, so it
// holds under the wallet's lock across instances and replays from the log.
import assert from "node:assert/strict";
import { type NewEvent, newEvent, type StoredEvent } from "../events/catalogue.ts";
import { commandOfCall, decideBilled, NOW, stream, WALLET } from "./helpers/decider.ts";
import { evolveDelivery } from "../projections/delivery_history.ts";
import { evolveHealth, healthyRow } from "../projections/webhook_health.ts";
import type { DeliveryDetail } from "../projections/delivery_history_reads.ts";
import { created, mailboxData, opened } from "./helpers/webhook_spec.ts";
import { webhookCalls } from "../src/webhooks/calls.ts";

const INTERVAL_MS = 60_000;
const given = [...opened(), created(mailboxData("inbox"))];

/** An email delivery of "inbox" that was given up, as the history read finds it. */
function abandoned(n: number): DeliveryDetail {
  const events: NewEvent[] = [
    newEvent("EmailReceived", {
      deliveryId: `dlv_${n}`,
      webhookId: "inbox",
      recipient: "r_inbox@mail.test",
      messageId: `<m${n}@x>`,
      from: "a@x.example",
      subject: "S",
      size: 10,
      attachments: [],
      truncated: false,
      webhookMessageId: `msg_${n}`,
    }),
    newEvent("DeliveryAbandoned", {
      deliveryId: `dlv_${n}`,
      webhookId: "inbox",
      kind: "email",
      attempts: 1,
      reason: "HTTP 410",
      cause: "final answer",
    }),
  ];
  let row;
  for (const event of stream(events)) row = evolveDelivery(row, event);
  return { row: row!, status: "abandoned", excerpts: new Map(), sentBody: "{}", kept: true };
}

/** The recover of the last day, at `now`, after `before`, finding `failed` in the window. */
function recover(before: NewEvent[], failed: DeliveryDetail[], now = NOW) {
  const request = {
    walletId: WALLET,
    webhookId: "inbox",
    since: new Date(now.getTime() - 86400_000).toISOString(),
  };
  const command = commandOfCall(webhookCalls.recover({ request, now, intervalMs: INTERVAL_MS }), {
    method: "POST",
    path: "/webhook/inbox/recover",
    endpoint: "webhook",
  });
  return decideBilled(before, command, { overrides: { failed }, now }).call();
}

Deno.test("a recover that queues deliveries paces the next: its first event carries when", () => {
  const done = recover(given, [abandoned(1), abandoned(2)]);
  assert.deepEqual([done.outcome.status, JSON.parse(done.outcome.body)], [200, { queued: 2 }]);
  assert.deepEqual(done.events?.map((e) => e.data), [
    {
      deliveryId: "dlv_1",
      webhookId: "inbox",
      messageId: "msg_1",
      reason: "recover",
      nextRecoverAt: new Date(NOW.getTime() + INTERVAL_MS).toISOString(),
    },
    { deliveryId: "dlv_2", webhookId: "inbox", messageId: "msg_2", reason: "recover" },
  ]);
});

Deno.test("within the interval: 429 with Retry-After, charged, nothing queued; nothing to queue is 200", () => {
  const first = recover(given, [abandoned(1)]);
  const after = [...given, ...first.events!];
  // The first recover, at NOW, paces the next until NOW + 60 s: 30 s later, 30 s are left.
  const soon = new Date(NOW.getTime() + 30_000);
  const refused = recover(after, [abandoned(1), abandoned(2)], soon);
  assert.deepEqual([refused.outcome.status, refused.outcome.headers, refused.log.status], [
    429,
    { "retry-after": "30" },
    429,
  ]);
  assert.equal(
    refused.outcome.body,
    "Too Many Requests: one recover per webhook every 60 s, the next in 30 s",
  );
  assert.equal(refused.charge, undefined, "charged the route's price like any refusal");
  assert.deepEqual([refused.events ?? [], refused.effects ?? []], [[], []]);

  const nothing = recover(after, [], soon);
  assert.deepEqual([nothing.outcome.status, JSON.parse(nothing.outcome.body)], [200, { queued: 0 }]);

  const later = recover(after, [abandoned(1)], new Date(NOW.getTime() + INTERVAL_MS));
  assert.deepEqual([later.outcome.status, JSON.parse(later.outcome.body)], [200, { queued: 1 }]);
});

Deno.test("the pace is folded from the log: old requeues do not pace, a resume keeps it", () => {
  const stored = (event: NewEvent) => stream([event])[0] as StoredEvent;
  const row = healthyRow(WALLET, "inbox");
  const requeued = {
    deliveryId: "dlv_1",
    webhookId: "inbox",
    messageId: "msg_1",
    reason: "recover",
  } as const;
  const old = newEvent("DeliveryRequeued", requeued);
  assert.equal(evolveHealth(row, stored(old)), row, "written before issue 21: no pace");
  const paced = evolveHealth(
    row,
    stored(newEvent("DeliveryRequeued", { ...requeued, nextRecoverAt: NOW.toISOString() })),
  )!;
  assert.deepEqual(paced.recover_after, NOW);
  const resumed = evolveHealth(paced, stored(newEvent("WebhookResumed", { webhookId: "inbox" })));
  assert.deepEqual(resumed?.recover_after, NOW);
});
