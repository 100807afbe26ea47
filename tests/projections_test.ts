// The folds alone: given events, then the rows they make.
import assert from "node:assert/strict";
import type { NewEvent, StoredEvent } from "../events/catalogue.ts";
import { evolveWallet, type WalletRow } from "../projections/wallets.ts";
import { kvProjection } from "../projections/kv.ts";
import { callLogsProjection } from "../projections/call_logs.ts";
import { creditChange, creditDeltaSql } from "../events/money.ts";

const AT = "2026-11-01T10:00:00Z";

/** Events recorded at the given instants, numbered as one wallet's stream. */
function stream(...steps: [string, NewEvent][]): StoredEvent[] {
  return steps.map(([at, event], i) => ({
    ...event,
    walletId: "w1",
    version: i + 1,
    position: i + 1,
    recordedAt: new Date(at),
  } as StoredEvent));
}

const billed = (cost: number, balance: number, callId = "c1") =>
  ({
    type: "CallBilled",
    data: {
      callId,
      method: "GET",
      path: "/kv/b/k",
      endpoint: "kv",
      status: 200,
      cost,
      balance,
      ms: 3,
    },
  }) as NewEvent;

const kvWritten: NewEvent = {
  type: "KvWritten",
  data: { bucket: "b", key: "k", value: "v", expiresAt: "2026-12-01T00:00:00.000Z" },
};

Deno.test("the wallet fold follows the balances the events state", () => {
  const events = stream(
    [AT, { type: "WalletOpened", data: {} }],
    [AT, { type: "CreditsGranted", data: { amount: 100, balance: 100, reason: "welcome" } }],
    ["2026-11-02T00:00:00Z", billed(1, 99)],
    [AT, kvWritten],
  );
  const wallet = events.reduce<WalletRow | undefined>(evolveWallet, undefined)!;
  assert.equal(wallet.balance, 99);
  assert.equal(wallet.version, 4);
  assert.deepEqual(wallet.created_at, new Date("2026-11-01T10:00:00Z"));
  assert.deepEqual(wallet.last_used_at, new Date("2026-11-02T00:00:00Z"));
  assert.equal(wallet.deactivated_at, null);
});

Deno.test("events of an unknown wallet make no wallet row", () => {
  const [event] = stream([AT, billed(1, 0)]);
  assert.equal(evolveWallet(undefined, event), undefined);
});

Deno.test("the KV fold writes and deletes by key", () => {
  const [written, deleted, other] = stream(
    [AT, kvWritten],
    [AT, { type: "KvDeleted", data: { bucket: "b", key: "k" } }],
    [AT, billed(1, 1)],
  );
  assert.equal(kvProjection.keyOf(written), kvProjection.keyOf(deleted));
  assert.equal(kvProjection.evolve(undefined, written)?.value, "v");
  assert.equal(kvProjection.evolve(kvProjection.evolve(undefined, written), deleted), undefined);
  assert.equal(kvProjection.keyOf(other), null);
});

Deno.test("a call log entry expires 7 days after the call", () => {
  const [event] = stream([AT, billed(1, 5)]);
  const row = callLogsProjection.evolve(undefined, event)!;
  assert.equal(row.expires_at.getTime() - row.at.getTime(), 7 * 24 * 3600 * 1000);
  assert.equal(row.error, null);
});

Deno.test("credit changes: grants add, billed calls subtract, the SQL says the same", () => {
  assert.deepEqual(creditChange(billed(3, 10)), { delta: -3, balance: 10 });
  assert.deepEqual(
    creditChange({ type: "CreditsGranted", data: { amount: 100, balance: 100, reason: "welcome" } }),
    { delta: 100, balance: 100 },
  );
  assert.equal(creditChange({ type: "WalletOpened", data: {} }), null);
  const sql = creditDeltaSql();
  assert.match(sql, /when 'CallBilled' then -\(data->>'cost'\)::bigint/);
  assert.match(sql, /when 'CreditsGranted' then \(data->>'amount'\)::bigint/);
});

Deno.test("only calls made with the token count as use: emails and scheduled runs do not", () => {
  const billedAs = (endpoint: string, callId: string) =>
    ({
      type: "CallBilled",
      data: { callId, method: "X", path: "/p", endpoint, status: 200, cost: 0, balance: 0, ms: 1 },
    }) as NewEvent;
  const wallet = stream(
    ["2026-01-01T00:00:00Z", { type: "WalletOpened", data: {} }],
    ["2026-02-01T00:00:00Z", billedAs("kv", "c1")],
    ["2026-03-01T00:00:00Z", billedAs("email", "c2")],
    ["2026-04-01T00:00:00Z", billedAs("webhook-delivery", "c3")],
  ).reduce<WalletRow | undefined>(evolveWallet, undefined)!;
  assert.deepEqual(wallet.last_used_at, new Date("2026-02-01T00:00:00Z"));
});
