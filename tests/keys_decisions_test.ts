// Given events / when a scoped key's command / then its decision: scope, buckets, spend cap, expiry
// and revocation, and the key-management decisions, without a database.
import assert from "node:assert/strict";
import { type EventData, newEvent } from "../events/catalogue.ts";
import { commandOfCall, decideBilled, NOW, WALLET } from "./helpers/decider.ts";
import { kvCalls } from "../src/kv/calls.ts";
import type { BilledCommand } from "../src/ledger/command.ts";
import { type KeyAccess, KEYS_NOT_ALLOWED } from "../src/calls/key_gate.ts";
import { keptCreation, type KeyRequest, MAX_ACTIVE_KEYS } from "../src/keys/commands.ts";
import { keyCalls } from "../src/keys/calls.ts";
import { failure, type Reply } from "../src/calls/reply.ts";

const opened = [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" }),
];
const keyMade = (keyId: string, rules: Partial<EventData<"KeyCreated">> = {}) =>
  newEvent("KeyCreated", { keyId, name: keyId, hash: `hash-${keyId}`, scope: "read", ...rules });
const written = newEvent("KvWritten", {
  bucket: "public",
  key: "k",
  value: "hello",
  expiresAt: "2099-01-01T00:00:00.000Z",
});

/** A call `keyId` made, charged `cost`, leaving `balance`. */
function keyCall(keyId: string, cost: number, balance: number) {
  return newEvent("CallBilled", {
    callId: `c${balance}`,
    method: "GET",
    path: "/kv/public/k",
    endpoint: "kv",
    status: 200,
    cost,
    balance,
    ms: 1,
    keyId,
  });
}

const READ_PUBLIC: KeyAccess = { need: "read", bucket: "public" };
/** A GET by the key; `access` null: a route closed to keys. */
const getBy = (keyId: string, access: KeyAccess | null = READ_PUBLIC) => {
  const call = kvCalls.get({ walletId: WALLET, bucket: "public", key: "k" });
  return commandOfCall({ ...call, access: access ?? undefined }, undefined, { keyId });
};
/** A write by the key, with the access the builder states for it. */
const setBy = (keyId: string, bucket = "public") => {
  const call = kvCalls.set({ walletId: WALLET, bucket, key: "k", value: "v", ttlSeconds: 0 });
  return commandOfCall(call, undefined, { keyId });
};

Deno.test("given a read key, when it reads its bucket, then the value, logged with the key", () => {
  const command = getBy("key1");
  assert.equal(command.call.keyId, "key1");
  const call = decideBilled([...opened, keyMade("key1"), written], command).call();
  assert.deepEqual([call.outcome.status, call.outcome.body, call.charge], [200, "hello", undefined]);
});

Deno.test("given a read key, when it writes, then 403 read-only, charged, and no event", () => {
  const call = decideBilled([...opened, keyMade("key1")], setBy("key1")).call();
  assert.deepEqual([call.outcome.status, call.charge, call.events], [403, undefined, undefined]);
  assert.match(call.outcome.body, /^Forbidden: key "key1" is read-only/);
});

Deno.test("given a write key, when it writes, then KvWritten", () => {
  const when = decideBilled([...opened, keyMade("key1", { scope: "write" })], setBy("key1"));
  assert.equal(when.call().outcome.status, 200);
  assert.deepEqual(when.events().map((e) => e.type), ["KvWritten"]);
});

Deno.test("given a key for some buckets, when it uses another, then 403 naming the buckets", () => {
  const given = [...opened, keyMade("key1", { scope: "write", buckets: ["a", "b"] })];
  const call = decideBilled(given, setBy("key1", "c")).call();
  assert.deepEqual(
    [call.outcome.status, call.outcome.body],
    [403, 'Forbidden: key "key1" may not use bucket "c": it may use "a", "b"'],
  );
  assert.equal(decideBilled(given, setBy("key1", "b")).call().outcome.status, 200);
});

Deno.test("given any key, when a route closed to keys, then 403", () => {
  const call = decideBilled([...opened, keyMade("key1", { scope: "write" })], getBy("key1", null)).call();
  assert.deepEqual([call.outcome.status, call.outcome.body], [403, KEYS_NOT_ALLOWED]);
});

Deno.test("given a key that spent its cap, when it calls, then 402 Spend cap reached, charging nothing", () => {
  const spent = [keyCall("key1", 1, 99), keyCall("key1", 1, 98)];
  const call = decideBilled([...opened, keyMade("key1", { spendCap: 2 }), written, ...spent], getBy("key1"))
    .call();
  assert.deepEqual([call.outcome.status, call.outcome.body, call.charge], [402, "Spend cap reached", 0]);
  const underCap = [...opened, keyMade("key1", { spendCap: 3 }), written, ...spent];
  assert.equal(decideBilled(underCap, getBy("key1")).call().outcome.status, 200);
  const otherKey = [...opened, keyMade("key1", { spendCap: 2 }), keyMade("key2"), written, ...spent];
  assert.equal(decideBilled(otherKey, getBy("key2")).call().outcome.status, 200, "spend is per key");
});

Deno.test("given a key past its expiry, when it calls, then 401 Key expired and no call at all", () => {
  const given = [...opened, keyMade("key1", { expiresAt: NOW.toISOString() }), written];
  const when = decideBilled(given, getBy("key1"));
  assert.deepEqual([when.decision.outcome.status, when.decision.outcome.body], [401, "Key expired"]);
  assert.equal(when.decision.log, undefined, "nothing charged or logged");
  const before = new Date(NOW.getTime() - 1);
  assert.equal(decideBilled(given, getBy("key1"), { now: before }).call().outcome.status, 200);
});

Deno.test("given a revoked key, when it calls, then 401 Key revoked, even from an empty wallet", () => {
  const revoked = [...opened, keyMade("key1"), newEvent("KeyRevoked", { keyId: "key1" })];
  const when = decideBilled(revoked, getBy("key1"));
  assert.deepEqual([when.decision.outcome.body, when.decision.log], ["Key revoked", undefined]);
  const drained = [...revoked, keyCall("key0", 100, 0)];
  assert.equal(decideBilled(drained, getBy("key1")).decision.outcome.body, "Key revoked");
  const unknown = decideBilled(opened, getBy("nokey"));
  assert.equal(unknown.decision.outcome.body, "Key revoked", "a key swept away is gone too");
});

const material = { keyId: "key_new", secret: "k_secret", hash: "hash-new" };
const create = (request: KeyRequest) =>
  commandOfCall(keyCalls.create({ walletId: WALLET, request, material }));

Deno.test("when a key is created, then KeyCreated with its hash only, and the secret in the answer", () => {
  const request = { name: "n", scope: "write" as const, buckets: ["a", "a"], spendCap: 9 };
  const when = decideBilled(
    opened,
    create(request),
  );
  assert.deepEqual(when.events(), [
    newEvent("KeyCreated", {
      keyId: "key_new",
      name: "n",
      hash: "hash-new",
      scope: "write",
      buckets: ["a"],
      spendCap: 9,
    }),
  ]);
  const reply = when.call().outcome;
  assert.equal(JSON.parse(reply.body).key, "k_secret");
  const kept = keptCreation(reply);
  assert.equal(kept.status, 409);
  assert.ok(!kept.body.includes("k_secret"), "an Idempotency-Key never keeps the secret");
});

Deno.test("when a key is created with a past expiry, or the wallet holds the most keys, then 400", () => {
  const past = { name: "n", scope: "read" as const, expiresAt: NOW.toISOString() };
  const late = decideBilled(opened, create(past));
  assert.equal(late.call().outcome.body, `Invalid expiresAt "${NOW.toISOString()}": must be in the future`);
  const many = Array.from({ length: MAX_ACTIVE_KEYS }, (_, i) => keyMade(`k${i}`));
  const request = { name: "n", scope: "read" as const };
  const full = decideBilled(
    [...opened, ...many],
    create(request),
  );
  assert.equal(full.call().outcome.status, 400);
  assert.deepEqual(full.events(), []);
  const oneRevoked = [...opened, ...many, newEvent("KeyRevoked", { keyId: "k0" })];
  const room = decideBilled(
    oneRevoked,
    create(request),
  );
  assert.equal(room.call().outcome.status, 200, "a revoked key leaves room");
});

Deno.test("given keys and their calls, when listed, then each key's spend, last use and state", () => {
  const given = [
    ...opened,
    keyMade("key1", { spendCap: 10 }),
    keyMade("key2", { expiresAt: "2000-01-01T00:00:00.000Z" }),
    keyCall("key1", 1, 99),
    keyCall("key1", 1, 98),
    newEvent("KeyRevoked", { keyId: "key1" }),
  ];
  const reply = decideBilled(given, commandOfCall(keyCalls.list({ walletId: WALLET }))).call().outcome;
  const keys = JSON.parse(reply.body).keys;
  assert.deepEqual(keys.map((k: any) => [k.id, k.spent, k.state, k.lastUsedAt !== null]), [
    ["key1", 2, "revoked", true],
    ["key2", 0, "expired", false],
  ]);
  assert.ok(!reply.body.includes("hash-key1"), "never the hash");
});

Deno.test("when revoked, then KeyRevoked once; an unknown key is 404", () => {
  const revoke = (keyId: string) => commandOfCall(keyCalls.revoke({ walletId: WALLET, keyId }));
  assert.deepEqual(decideBilled([...opened, keyMade("key1")], revoke("key1")).events(), [
    newEvent("KeyRevoked", { keyId: "key1" }),
  ]);
  const again = decideBilled(
    [...opened, keyMade("key1"), newEvent("KeyRevoked", { keyId: "key1" })],
    revoke("key1"),
  );
  assert.deepEqual([again.call().outcome.body, again.events()], ["OK", []]);
  assert.equal(decideBilled(opened, revoke("key9")).call().outcome.status, 404);
});

/** The command with an Idempotency-Key whose mismatch is the charged 422. */
const withKey = (command: BilledCommand<Reply, any>) => ({
  ...command,
  idempotency: {
    key: "k",
    fingerprint: "f",
    keep: (reply: Reply) => reply,
    replay: (kept: Reply) => kept,
    mismatch: () => failure(422, 'Idempotency-Key "k" was already used for a different request'),
  },
});

Deno.test("given a key at its cap, when it reuses an Idempotency-Key for another request, then 402, free", () => {
  const given = [...opened, keyMade("key1", { scope: "write", spendCap: 1 }), keyCall("key1", 1, 99)];
  const call = decideBilled(given, withKey(setBy("key1")), { kept: "other" }).call();
  assert.deepEqual([call.outcome.status, call.charge], [402, 0]);
});

Deno.test("given a read key, when it reuses an Idempotency-Key for a write, then 403 before the mismatch", () => {
  const call = decideBilled([...opened, keyMade("key1")], withKey(setBy("key1")), { kept: "other" }).call();
  assert.equal(call.outcome.status, 403);
});

Deno.test("given a revoked key with a kept answer, when it retries, then 401 and no replay", () => {
  const given = [...opened, keyMade("key1", { scope: "write" }), newEvent("KeyRevoked", { keyId: "key1" })];
  const when = decideBilled(given, withKey(setBy("key1")), { kept: "same" });
  assert.deepEqual([when.decision.outcome.status, when.decision.log], [401, undefined]);
});
