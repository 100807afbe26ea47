// The folds alone: given events, then the rows they make.
import assert from "node:assert/strict";
import type { NewEvent, StoredEvent } from "../events/catalogue.ts";
import { evolveWallet, type WalletRow } from "../projections/wallets.ts";
import { kvProjection } from "../projections/kv.ts";
import { callLogsProjection } from "../projections/call_logs.ts";
import { creditChange, creditDeltaSql } from "../events/catalogue.ts";

let version = 0;
function stored(event: NewEvent, at = new Date("2026-11-01T10:00:00Z")): StoredEvent {
  version++;
  return { ...event, walletId: "w1", version, position: version, recordedAt: at } as StoredEvent;
}

const billed = (cost: number, balance: number) =>
  ({
    type: "CallBilled",
    data: {
      callId: `c${version}`,
      method: "GET",
      path: "/kv/b/k",
      endpoint: "kv",
      status: 200,
      cost,
      balance,
      ms: 3,
    },
  }) as NewEvent;

Deno.test("the wallet fold follows the balances the events state", () => {
  version = 0;
  const events = [
    stored({ type: "WalletOpened", data: {} }),
    stored({ type: "CreditsGranted", data: { amount: 100, balance: 100, reason: "welcome" } }),
    stored(billed(1, 99), new Date("2026-11-02T00:00:00Z")),
    stored({
      type: "KvWritten",
      data: { bucket: "b", key: "k", value: "v", expiresAt: "2026-12-01T00:00:00.000Z" },
    }),
  ];
  const wallet = events.reduce<WalletRow | undefined>(evolveWallet, undefined)!;
  assert.equal(wallet.balance, 99);
  assert.equal(wallet.version, 4);
  assert.deepEqual(wallet.created_at, new Date("2026-11-01T10:00:00Z"));
  assert.deepEqual(wallet.last_used_at, new Date("2026-11-02T00:00:00Z"));
  assert.equal(wallet.deactivated_at, null);
});

Deno.test("events of an unknown wallet make no wallet row", () => {
  assert.equal(evolveWallet(undefined, stored(billed(1, 0))), undefined);
});

Deno.test("the KV fold writes and deletes by key", () => {
  const written = stored({
    type: "KvWritten",
    data: { bucket: "b", key: "k", value: "v", expiresAt: "2026-12-01T00:00:00.000Z" },
  });
  const deleted = stored({ type: "KvDeleted", data: { bucket: "b", key: "k" } });
  assert.equal(kvProjection.keyOf(written), kvProjection.keyOf(deleted));
  assert.equal(kvProjection.evolve(undefined, written)?.value, "v");
  assert.equal(kvProjection.evolve(kvProjection.evolve(undefined, written), deleted), undefined);
  assert.equal(kvProjection.keyOf(stored(billed(1, 1))), null);
});

Deno.test("a call log entry expires 7 days after the call", () => {
  const row = callLogsProjection.evolve(undefined, stored(billed(1, 5)))!;
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
  version = 0;
  const opened = stored({ type: "WalletOpened", data: {} }, new Date("2026-01-01T00:00:00Z"));
  const billedAs = (endpoint: string, at: string) =>
    stored({
      type: "CallBilled",
      data: {
        callId: `c${version}`,
        method: "X",
        path: "/p",
        endpoint,
        status: 200,
        cost: 0,
        balance: 0,
        ms: 1,
      },
    } as NewEvent, new Date(at));
  const wallet = [
    opened,
    billedAs("kv", "2026-02-01T00:00:00Z"),
    billedAs("email", "2026-03-01T00:00:00Z"),
    billedAs("webhook-delivery", "2026-04-01T00:00:00Z"),
  ].reduce<WalletRow | undefined>(evolveWallet, undefined)!;
  assert.deepEqual(wallet.last_used_at, new Date("2026-02-01T00:00:00Z"));
});
