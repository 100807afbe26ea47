// Given events / when a free view / then its answer: the ledger page with its cursor and refs, the
// usage per day and type as JSON and CSV, and the per-wallet rate limit, without a database.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { commandOfCall, decideBilled, NOW, stream, WALLET } from "./helpers/decider.ts";
import type { ReadSet } from "../src/ledger/reads.ts";
import { walletCalls } from "../src/wallets/calls.ts";
import type { BilledCall } from "../src/calls/billed_call.ts";
import { usageOf, utcDay } from "../projections/daily_usage.ts";
import { MOVEMENT_SCAN_EVENTS } from "../projections/credit_movements.ts";
import { VIEW_CALLS_PER_MINUTE } from "../src/wallets/view_limit.ts";

const opened: NewEvent[] = [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" }),
];

function call(
  fields: {
    cost: number;
    balance: number;
    endpoint?: string;
    method?: string;
    path?: string;
    status?: number;
  },
): NewEvent {
  const { cost, balance, endpoint = "kv", method = "GET", path = "/kv/b/k", status = 200 } = fields;
  return newEvent("CallBilled", {
    callId: `call${balance}-${cost}-${status}`,
    method,
    path,
    endpoint,
    status,
    ...(status >= 400 ? { error: "Key Not Found" } : {}),
    cost,
    balance,
    ms: 1,
  });
}

const viewCall = (path: string, status = 200) =>
  call({ cost: 0, balance: 100, endpoint: "token", path, status });

/** The view's command, as the route and the usage_summary tool make it. */
function command<R extends ReadSet>(view: BilledCall<R>, path: string) {
  return commandOfCall(view, { method: "GET", path, endpoint: "token" });
}

const ledgerAfter = (given: NewEvent[], limit = 50, now = NOW) => {
  const reply =
    decideBilled(given, command(walletCalls.ledger({ walletId: WALLET, limit }), "/token/ledger"), { now })
      .call().outcome;
  return { reply, body: reply.status === 200 ? JSON.parse(reply.body) : undefined };
};

Deno.test("the ledger lists every credit movement newest first, signed, with the balance after each", () => {
  const given = [
    ...opened,
    call({ cost: 1, balance: 99 }),
    call({ cost: 0, balance: 99, endpoint: "token", path: "/recharge" }), // moves nothing: not listed
    newEvent("CreditsPurchased", { amount: 1_000_000, balance: 1_000_099, tier: "1", paymentId: "evt_1" }),
    newEvent("CreditsGranted", { amount: 50, balance: 1_000_149, reason: "support refund" }),
    call({ cost: 1, balance: 1_000_148, status: 404 }),
  ];
  const { body } = ledgerAfter(given);
  assert.equal(body.nextCursor, null);
  assert.deepEqual(body.entries.map((e: any) => [e.type, e.amount, e.balance, e.ref, e.endpoint]), [
    ["debit", -1, 1_000_148, "call1000148-1-404", "kv"],
    ["adjustment", 50, 1_000_149, "support refund", null],
    ["purchase", 1_000_000, 1_000_099, "evt_1", "payment"],
    ["debit", -1, 99, "call99-1-200", "kv"],
    ["grant", 100, 100, "welcome", null],
  ]);
  assert.ok(body.entries.every((e: any) => Date.parse(e.at) < NOW.getTime()));
});

Deno.test("an email's debit names its Message-ID, a run's debit its webhook and planned time", () => {
  const given = [
    ...opened,
    call({ cost: 2, balance: 98, endpoint: "email", method: "SMTP", path: "r_abc@mail.localhost" }),
    newEvent("EmailReceived", {
      deliveryId: "d1",
      webhookId: "inbox",
      recipient: "r_abc@mail.localhost",
      messageId: "<m1@example.com>",
      from: "a@example.com",
      subject: "Hi",
      size: 10,
      attachments: [],
      truncated: false,
    }),
    call({ cost: 2, balance: 96, endpoint: "webhook-delivery", method: "CRON", path: "nightly" }),
    newEvent("ScheduleFired", {
      webhookId: "nightly",
      plannedAt: "2027-03-01T00:00:00.000Z",
      executedAt: "2027-03-01T00:00:01.000Z",
      deliveryId: "d2",
      nextRunAt: null,
    }),
  ];
  const { body } = ledgerAfter(given);
  assert.deepEqual(body.entries.slice(0, 2).map((e: any) => [e.amount, e.ref, e.endpoint]), [
    [-2, "nightly@2027-03-01T00:00:00.000Z", "scheduled"],
    [-2, "<m1@example.com>", "email"],
  ]);
});

Deno.test("a page holds `limit` entries and the cursor of the next one", () => {
  const given = [...opened, ...Array.from({ length: 5 }, (_, i) => call({ cost: 1, balance: 99 - i }))];
  const { body } = ledgerAfter(given, 2);
  assert.deepEqual(body.entries.map((e: any) => e.balance), [95, 96]);
  // Versions: 1 opened, 2 granted, 3..7 the calls; the next page is below the last shown (6).
  assert.equal(body.nextCursor, "6");
});

Deno.test("a page that looked at fewer versions than the wallet has goes on below them", () => {
  const view = walletCalls.ledger({ walletId: WALLET, limit: 50 });
  const lowestScanned = 5000 - MOVEMENT_SCAN_EVENTS + 1;
  const page = {
    movements: [{
      version: 4990,
      at: NOW,
      type: "debit" as const,
      amount: -1,
      balance: 7,
      ref: "c",
      endpoint: "kv",
    }],
    lowestScanned,
  };
  const answer = decideBilled(opened, command(view, "/token/ledger"), { overrides: { page } }).call();
  const body = JSON.parse(answer.outcome.body);
  assert.equal(body.entries.length, 1);
  assert.equal(body.nextCursor, String(lowestScanned));
});

const usageAfter = (given: NewEvent[], options: { days: number; csv: boolean }, now = NOW) =>
  decideBilled(given, command(walletCalls.usage({ walletId: WALLET, ...options }), "/token/usage"), { now })
    .call().outcome;

Deno.test("usage counts calls, credits and errors per UTC day and type; deliveries and payments are free", () => {
  const given = [
    ...opened,
    call({ cost: 1, balance: 99 }),
    call({ cost: 1, balance: 98, status: 404 }),
    call({ cost: 2, balance: 96, endpoint: "email", method: "SMTP", path: "r_1@mail.localhost" }),
    newEvent("DeliveryAttempted", {
      attemptId: "a1",
      deliveryId: "d1",
      webhookId: "inbox",
      kind: "email",
      messageId: "<m>",
      attempt: 1,
      ok: false,
      status: 500,
      latencyMs: 3,
      cost: 2,
      balance: 96,
    }),
    call({
      cost: 0,
      balance: 96,
      endpoint: "webhook-delivery",
      method: "CRON",
      path: "nightly",
      status: 402,
    }),
    newEvent("CreditsPurchased", { amount: 1_000_000, balance: 1_000_096, tier: "1", paymentId: "evt_1" }),
  ];
  const reply = usageAfter(given, { days: 3, csv: false });
  const { days } = JSON.parse(reply.body);
  assert.deepEqual(days.map((d: any) => d.date), ["2027-02-27", "2027-02-28", "2027-03-01"]);
  assert.deepEqual(days[0].byType, {});
  assert.deepEqual(days[2].byType, {
    kv: { calls: 2, credits: 2, errors: 1 },
    "webhook-delivery": { calls: 1, credits: 0, errors: 1 },
    email: { calls: 1, credits: 2, errors: 0 },
    scheduled: { calls: 1, credits: 0, errors: 1 },
    payment: { calls: 1, credits: 0, errors: 0 },
  });

  const csv = usageAfter(given, { days: 3, csv: true });
  assert.equal(csv.contentType, "text/csv; charset=utf-8");
  assert.equal(
    csv.body,
    "date,type,calls,credits,errors\r\n2027-03-01,kv,2,2,1\r\n2027-03-01,webhook-delivery,1,0,1\r\n" +
      "2027-03-01,email,1,2,0\r\n2027-03-01,scheduled,1,0,1\r\n2027-03-01,payment,1,0,0\r\n",
  );
});

Deno.test("usage outside the range is left out; days run up to today's UTC day", () => {
  const given = [...opened, call({ cost: 1, balance: 99 })]; // on 2027-03-01
  const later = new Date("2027-03-03T00:00:00.000Z");
  const { days } = JSON.parse(usageAfter(given, { days: 2, csv: false }, later).body);
  assert.deepEqual(days, [{ date: "2027-03-02", byType: {} }, { date: "2027-03-03", byType: {} }]);
  assert.deepEqual(stream(given).map((event) => usageOf(event)?.type ?? null), [null, null, "kv"]);
});

Deno.test("a time's UTC day is its ISO date, on both sides of midnight and before 1970", () => {
  const day = 24 * 3600 * 1000;
  let seed = 11;
  const times = [0, -1, day - 1, day, -day, -day - 1, Date.UTC(2026, 11, 31, 23, 59, 59, 999)];
  for (let i = 0; i < 5000; i++) {
    seed = (seed * 48271) % 2147483647;
    times.push((seed % 200_000) * 3_600_017 - 40 * 365 * day);
  }
  // Twice over: the second pass reads the days the first one kept.
  for (const pass of [1, 2]) {
    for (const at of times) {
      assert.equal(utcDay(new Date(at)), new Date(at).toISOString().slice(0, 10), `${at}, pass ${pass}`);
    }
  }
  assert.throws(() => utcDay(new Date(NaN)), RangeError);
});

Deno.test(`the free views allow ${VIEW_CALLS_PER_MINUTE} calls in any minute per wallet, then 429 with Retry-After`, () => {
  const calls = Array.from(
    { length: VIEW_CALLS_PER_MINUTE },
    (_, i) => viewCall(i % 2 ? "/token/ledger?limit=5" : "/token/usage"),
  );
  const given = [...opened, ...calls];
  // decider streams are one second apart: the last call is at NOW - 61 s, the oldest counted 29 s before it.
  const justAfter = new Date(NOW.getTime() - 60_000);
  const refused = ledgerAfter(given, 50, justAfter).reply;
  assert.equal(refused.status, 429);
  assert.equal(refused.body, "Too Many Requests");
  assert.deepEqual(refused.headers, { "retry-after": "30" });
  const refusedUsage = usageAfter(given, { days: 1, csv: false }, justAfter);
  assert.equal(refusedUsage.status, 429);

  // Once the oldest of them is a minute old, one more fits.
  const minuteLater = new Date(NOW.getTime() - 61_000 - 29_000 + 60_000);
  assert.equal(ledgerAfter(given, 50, minuteLater).reply.status, 200);

  // Refused calls do not count, other token calls neither.
  const fewer = [...opened, ...calls.slice(1), viewCall("/token/usage", 429), viewCall("/token/logs")];
  assert.equal(ledgerAfter(fewer, 50, justAfter).reply.status, 200);
});
