// Given events / when a KV command / then its decision: the key-value rules without a database.
import assert from "node:assert/strict";
import { newEvent } from "../events/catalogue.ts";
import { decideBilled, NOW, WALLET } from "./helpers/decider.ts";
import type { BilledCommand, DecideState, Decision } from "../src/ledger/command.ts";
import { read, type ReadSet } from "../src/ledger/reads.ts";
import { kvEntryRead } from "../projections/kv.ts";
import { deleteValue, MAX_TTL_SECONDS, readValue, writeValue } from "../src/kv/commands.ts";
import { failure, type Reply } from "../src/http/reply.ts";

const opened = [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" }),
];
const written = (key: string, value: string, expiresAt = "2099-01-01T00:00:00.000Z") =>
  newEvent("KvWritten", { bucket: "b", key, value, expiresAt });

function kvCommand<R extends ReadSet>(reads: R, decide: (state: DecideState<R>) => Decision<Reply>) {
  const command: BilledCommand<Reply, R> = {
    walletId: WALLET,
    price: 1,
    call: { method: "GET", path: "/kv/b/k", endpoint: "kv", startedAt: 0 },
    reads,
    decide,
    unpaid: () => failure(402, "Insufficient credits"),
  };
  return command;
}

const entry = (key: string) => ({ entry: read(kvEntryRead, { walletId: WALLET, bucket: "b", key }) });
const get = (key: string) => kvCommand(entry(key), ({ reads }) => readValue(reads.entry));
const remove = (key: string) => kvCommand(entry(key), ({ reads }) => deleteValue(reads.entry));

Deno.test("given a written key, when read, then its value at the price", () => {
  const call = decideBilled([...opened, written("k", "hello")], get("k")).call();
  assert.deepEqual([call.outcome.status, call.outcome.body, call.log, call.charge], [200, "hello", {
    status: 200,
  }, undefined]);
  assert.deepEqual(call.events, undefined);
});

Deno.test("given a key written then deleted, when read, then 404 Key Not Found, still charged", () => {
  const given = [...opened, written("k", "v"), newEvent("KvDeleted", { bucket: "b", key: "k" })];
  const call = decideBilled(given, get("k")).call();
  assert.deepEqual([call.outcome.status, call.log], [404, { status: 404, error: "Key Not Found" }]);
  assert.equal(call.charge, undefined, "the route's price");
});

Deno.test("given another key only, when deleted, then 404 and no event", () => {
  const when = decideBilled([...opened, written("other", "v")], remove("k"));
  assert.equal(when.call().outcome.status, 404);
  assert.deepEqual(when.events(), []);
});

Deno.test("given a key, when deleted, then KvDeleted", () => {
  const when = decideBilled([...opened, written("k", "v")], remove("k"));
  assert.equal(when.call().outcome.body, "OK");
  assert.deepEqual(when.events(), [newEvent("KvDeleted", { bucket: "b", key: "k" })]);
});

Deno.test("when written with ttl 0 or 60, then KvWritten expires after the maximum or 60 s", () => {
  for (const [ttlSeconds, seconds] of [[0, MAX_TTL_SECONDS], [60, 60]]) {
    const write = kvCommand(
      {},
      ({ now }) => writeValue({ bucket: "b", key: "k", value: "v", ttlSeconds }, now),
    );
    assert.deepEqual(decideBilled(opened, write).events(), [
      written("k", "v", new Date(NOW.getTime() + seconds * 1000).toISOString()),
    ]);
  }
});

Deno.test("given an empty wallet, when read, then 402 from unpaid, nothing charged", () => {
  const drained = [
    ...opened,
    newEvent("CallBilled", {
      callId: "c",
      method: "GET",
      path: "/token",
      endpoint: "token",
      status: 200,
      cost: 100,
      balance: 0,
      ms: 1,
    }),
  ];
  const call = decideBilled(drained, get("k")).call();
  assert.deepEqual([call.outcome.status, call.log.error], [402, "Insufficient credits"]);
});
