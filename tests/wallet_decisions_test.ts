// Given events / when a wallet command / then its decision: the balance, the recharge link, the
// call-log page, opening a wallet, payments, deactivation and the low-balance rule, without a database.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import {
  commandOfCall,
  decideBilled,
  decideUnbilled,
  NOW,
  stream,
  WALLET,
  walletAfter,
} from "./helpers/decider.ts";
import { walletCalls } from "../src/wallets/calls.ts";
import type { BilledCall } from "../src/calls/billed_call.ts";
import type { ReadSet } from "../src/ledger/reads.ts";
import { openWalletCommand, TOKEN_INTERVAL_MS } from "../src/wallets/open_wallet.ts";
import { purchaseCommand } from "../src/payments/purchase.ts";
import { deactivateCommand } from "../src/wallets/deactivation.ts";
import { lowBalanceRule } from "../src/alerts/low_balance.ts";
import type { CallLogRow } from "../projections/call_logs.ts";

const opened = (credits = 100): NewEvent[] => [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: credits, balance: credits, reason: "welcome" }),
];
const billed = (cost: number, balance: number, endpoint = "kv"): NewEvent =>
  newEvent("CallBilled", {
    callId: `c${balance}`,
    method: "GET",
    path: "/x",
    endpoint,
    status: 200,
    cost,
    balance,
    ms: 1,
  });

/** A call of the wallet's own, as its route makes it. */
const tokenCommand = <R extends ReadSet>(call: BilledCall<R>) =>
  commandOfCall(call, { method: "GET", path: "/token", endpoint: "token" });
/** GET /token/logs, its newest entries as the read would find them. */
const logsAfter = (given: NewEvent[], rows: CallLogRow[]) =>
  decideBilled(given, tokenCommand(walletCalls.logs({ walletId: WALLET, limit: 5 })), {
    overrides: { newest: rows },
  });

Deno.test("GET /token answers the balance after its own debit", () => {
  const call = decideBilled(opened(), tokenCommand(walletCalls.info())).call();
  assert.deepEqual(JSON.parse(call.outcome.body).wallet, 99);
});

Deno.test("the recharge link carries the token and costs nothing", () => {
  const call = decideBilled(
    opened(),
    tokenCommand(walletCalls.recharge({ link: "https://pay.example/t1", token: "tok" })),
  )
    .call();
  assert.equal(call.outcome.body, "https://pay.example/t1?client_reference_id=tok");
});

Deno.test("the log page charges one credit per entry, never more entries than the balance pays for", () => {
  const row = (id: string): CallLogRow => ({
    wallet_id: WALLET,
    id,
    version: 1,
    method: "GET",
    path: "/kv/b/k",
    endpoint: "kv",
    status_code: 200,
    error: null,
    cost: 1,
    balance: 1,
    response_time_ms: 1,
    at: NOW,
    expires_at: NOW,
    key_id: null,
  });
  const rows = ["a", "b", "c", "d"].map(row);
  const three = logsAfter([...opened(), billed(97, 3)], rows);
  assert.deepEqual([JSON.parse(three.call().outcome.body).n, three.call().charge], [3, 3]);
  const empty = logsAfter([...opened(), billed(100, 0)], rows);
  assert.equal(empty.call().outcome.status, 402);
});

Deno.test("a wallet opens with its welcome credits unless the address asked less than 10 s ago", () => {
  const fresh = decideUnbilled([], openWalletCommand(WALLET, "tok", "192.0.2.1"), {
    overrides: { last: new Date(NOW.getTime() - TOKEN_INTERVAL_MS) },
  });
  assert.deepEqual(fresh.outcome, { ok: true, token: "tok", walletId: WALLET });
  assert.deepEqual(fresh.events?.map((e) => e.type), ["WalletOpened", "CreditsGranted"]);
  assert.deepEqual(fresh.effects, [{ type: "recordTokenRequest", clientIp: "192.0.2.1" }]);
  const soon = decideUnbilled([], openWalletCommand(WALLET, "tok", "192.0.2.1"), {
    overrides: { last: new Date(NOW.getTime() - 2500) },
  });
  assert.deepEqual([soon.outcome, soon.events, soon.effects], [
    { ok: false, retryAfterSeconds: 8 },
    undefined,
    undefined,
  ]);
});

Deno.test("a payment is credited once per payment id, and never to an unknown wallet", () => {
  const purchase = purchaseCommand({ walletId: WALLET, tier: "1", paymentId: "evt_1" });
  const first = decideUnbilled(opened(), purchase);
  assert.equal(first.outcome, "credited");
  assert.deepEqual(first.events, [
    newEvent("CreditsPurchased", { amount: 1_000_000, balance: 1_000_100, tier: "1", paymentId: "evt_1" }),
  ]);
  assert.equal(decideUnbilled([...opened(), ...first.events!], purchase).outcome, "already credited");
  assert.equal(decideUnbilled([], purchase).outcome, "unknown wallet");
});

Deno.test("a wallet idle for two years is deactivated; a day less is kept", () => {
  const idle = stream(opened());
  const lastUsed = walletAfter(idle)!.last_used_at;
  const twoYears = new Date(lastUsed);
  twoYears.setUTCFullYear(twoYears.getUTCFullYear() + 2);
  const day = 24 * 3600 * 1000;
  const kept = decideUnbilled(opened(), deactivateCommand(WALLET), {
    now: new Date(twoYears.getTime() - day),
  });
  assert.deepEqual([kept.outcome, kept.events], [false, undefined]);
  const gone = decideUnbilled(opened(), deactivateCommand(WALLET), {
    now: new Date(twoYears.getTime() + day),
  });
  assert.deepEqual(gone.events, [newEvent("WalletDeactivated", { lastUsedAt: lastUsed.toISOString() })]);
});

Deno.test("the low-balance rule alerts once per episode, to the configured channels", () => {
  let n = 0;
  const rule = lowBalanceRule({ newDeliveryId: () => `dlv_${++n}`, newMessageId: () => `msg_${n}` });
  const settings = newEvent("LowBalanceSettingsChanged", {
    threshold: 50,
    webhook: { url: "https://hooks.example/a", headers: {}, options: {} },
    secret: "whsec_x",
  });
  const wallet = walletAfter(stream([...opened(), settings, billed(40, 60)]))!;
  assert.equal(rule.afterDebit(wallet, { charge: 5, balance: 55, now: NOW }), undefined, "still above");
  const crossing = rule.afterDebit(wallet, { charge: 11, balance: 49, now: NOW })!;
  assert.deepEqual(crossing.events, [
    newEvent("LowBalanceAlerted", { threshold: 50, balance: 49, channels: ["webhook"] }),
  ]);
  assert.deepEqual(crossing.effects, [{
    type: "queueDelivery",
    delivery: {
      kind: "alert_webhook",
      id: "dlv_1",
      walletId: WALLET,
      messageId: "msg_1",
      cost: 0,
      payload: { wallet: 49, threshold: 50, token_hash: WALLET },
    },
  }]);
  const alerted = walletAfter(stream([...opened(), settings, billed(51, 49), crossing.events![0]]))!;
  assert.equal(rule.afterDebit(alerted, { charge: 1, balance: 48, now: NOW }), undefined, "one per episode");
  assert.equal(
    rule.afterDebit(wallet, { charge: 0, balance: 49, now: NOW }),
    undefined,
    "a free call is no debit",
  );
});

Deno.test("the wallet fold refuses an event whose stated balance does not follow from the last", () => {
  assert.throws(() => walletAfter(stream([...opened(), billed(1, 98)])), /states balance 98, not 100 \+ -1/);
});
