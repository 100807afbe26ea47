// Given a claimed delivery and the receiver's answer / then what the attempt records: the retry
// planned, the row removed, the delivery given up, or only the fact of the attempt when the claim
// was lost. No database.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { decideUnbilled, NOW, WALLET } from "./helpers/decider.ts";
import { recordAttempt } from "../src/webhooks/attempt_record.ts";
import type { ClaimedDelivery } from "../src/webhooks/outbox.ts";
import type { AttemptResult } from "../src/webhooks/delivery_channel.ts";

const opened = [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" }),
];
const delivery = (attempts: number, kind: "email" | "scheduled" = "email"): ClaimedDelivery =>
  ({
    kind,
    id: "dlv_1",
    walletId: WALLET,
    webhookId: "inbox",
    messageId: "msg_1",
    cost: 2,
    payload: {},
    attempts,
    claimToken: "t1",
  }) as ClaimedDelivery;
const failed: AttemptResult = { ok: false, status: 503, latencyMs: 12, retryable: true, error: "HTTP 503" };
const record = (d: ClaimedDelivery, result: AttemptResult | undefined) =>
  recordAttempt({ delivery: d, result, logPath: "inbox", attemptId: "a1", retryScale: 1 });
const types = (events?: NewEvent[]) => events?.map((e) => e.type);

Deno.test("a delivered first attempt: DeliveryAttempted with the email's cost, the row removed", () => {
  const done = decideUnbilled(opened, record(delivery(0), { ok: true, status: 200, latencyMs: 5 }), {
    overrides: { held: true },
  });
  assert.deepEqual(done.events, [newEvent("DeliveryAttempted", {
    attemptId: "a1",
    deliveryId: "dlv_1",
    webhookId: "inbox",
    kind: "email",
    messageId: "msg_1",
    attempt: 1,
    ok: true,
    status: 200,
    latencyMs: 5,
    cost: 2,
    balance: 100,
  })]);
  assert.deepEqual(done.effects?.map((e) => e.type), ["completeDelivery"]);
});

Deno.test("a retryable failure plans the next attempt 5 s on; a retry costs 0 on its log entry", () => {
  const retry = decideUnbilled(opened, record(delivery(1), failed), { overrides: { held: true } });
  const attempted = retry.events![0] as Extract<NewEvent, { type: "DeliveryAttempted" }>;
  assert.deepEqual([attempted.data.attempt, attempted.data.cost], [2, 0]);
  assert.equal(attempted.data.nextAttemptAt, new Date(NOW.getTime() + 5 * 60_000).toISOString());
  assert.deepEqual(retry.effects, [{
    type: "rescheduleDelivery",
    claim: { walletId: WALLET, id: "dlv_1", claimToken: "t1" },
    at: new Date(attempted.data.nextAttemptAt!),
  }]);
});

Deno.test("the seventh failure, a final answer or a failed run gives up: DeliveryAbandoned", () => {
  for (
    const [d, result] of [
      [delivery(6), failed],
      [delivery(0), { ...failed, status: 410, retryable: false }],
      [
        delivery(0, "scheduled"),
        failed,
      ],
    ] as const
  ) {
    const given = decideUnbilled(opened, record(d, result), { overrides: { held: true } });
    assert.deepEqual(types(given.events), ["DeliveryAttempted", "DeliveryAbandoned"]);
    assert.deepEqual(given.effects?.map((e) => e.type), ["completeDelivery"]);
  }
});

Deno.test("a lost claim records the attempt only; a deleted target abandons only while held", () => {
  const lost = decideUnbilled(opened, record(delivery(1), failed), { overrides: { held: undefined } });
  assert.deepEqual([types(lost.events), lost.effects], [["DeliveryAttempted"], undefined]);
  const attempted = lost.events![0] as Extract<NewEvent, { type: "DeliveryAttempted" }>;
  assert.equal(attempted.data.nextAttemptAt, undefined, "the new holder plans the retry");
  const gone = decideUnbilled(opened, record(delivery(2), undefined), { overrides: { held: true } });
  assert.deepEqual(gone.events, [newEvent("DeliveryAbandoned", {
    deliveryId: "dlv_1",
    webhookId: "inbox",
    kind: "email",
    attempts: 2,
    reason: "webhook deleted",
  })]);
  assert.deepEqual(decideUnbilled(opened, record(delivery(2), undefined)).events, undefined);
});

Deno.test("an attempt in flight when its wallet was erased leaves nothing: its rows stay gone", () => {
  const erased = [
    ...opened,
    newEvent("WalletErased", { by: "owner", kvEntries: 0, webhooks: 1, keys: 0, attachments: 0 }),
  ];
  for (const result of [failed, { ok: true, status: 200, latencyMs: 5 } as AttemptResult, undefined]) {
    const after = decideUnbilled(erased, record(delivery(1), result), { overrides: { held: undefined } });
    assert.deepEqual([after.events, after.effects], [undefined, undefined]);
  }
  const deactivated = [...opened, newEvent("WalletDeactivated", { lastUsedAt: new Date(0).toISOString() })];
  const lost = decideUnbilled(deactivated, record(delivery(1), failed), { overrides: { held: undefined } });
  assert.equal(lost.events, undefined);
});
