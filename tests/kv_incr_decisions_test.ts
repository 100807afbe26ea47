// Given events / when an increment / then its decision: counters without a database.
import assert from "node:assert/strict";
import { newEvent } from "../events/catalogue.ts";
import { commandOfCall, decideBilled, NOW, stream, WALLET } from "./helpers/decider.ts";
import { kvCalls } from "../src/kv/calls.ts";
import { kvProjection } from "../projections/kv.ts";
import { counterValue, MAX_COUNTER, MAX_TTL_SECONDS } from "../src/kv/commands.ts";
import { parseEtagCondition } from "../src/kv/preconditions.ts";

const opened = [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" }),
];
const LATER = "2099-01-01T00:00:00.000Z";
const written = (value: string, expiresAt = LATER) =>
  newEvent("KvWritten", { bucket: "b", key: "n", value, expiresAt });
const incremented = (by: number, value: number, expiresAt: string) =>
  newEvent("KvIncremented", { bucket: "b", key: "n", by, value, expiresAt });

function incr(by: number, ttlSeconds = 0, ifMatch?: string) {
  const conditions = ifMatch ? { ifMatch: parseEtagCondition(ifMatch) } : {};
  const call = kvCalls.incr({ walletId: WALLET, bucket: "b", key: "n", by, ttlSeconds, conditions });
  return commandOfCall(call, { method: "POST", path: "/kv/b/n/incr", endpoint: "kv" });
}

const after = (seconds: number) => new Date(NOW.getTime() + seconds * 1000).toISOString();

Deno.test("given no key, when incremented, then it counts from 0 with the default TTL or the one asked", () => {
  const plain = decideBilled(opened, incr(1)).call();
  assert.deepEqual([plain.outcome.status, plain.outcome.body], [200, "1"]);
  assert.deepEqual(plain.events, [incremented(1, 1, after(MAX_TTL_SECONDS))]);
  assert.deepEqual(decideBilled(opened, incr(-5, 60)).events(), [incremented(-5, -5, after(60))]);
});

Deno.test("given a counter, when incremented, then the sum, and the key keeps its expiry whatever the ttl", () => {
  const given = [...opened, written("41", "2027-03-02T00:00:00.000Z")];
  const call = decideBilled(given, incr(1, 60)).call();
  assert.equal(call.outcome.body, "42");
  assert.deepEqual(call.events, [incremented(1, 42, "2027-03-02T00:00:00.000Z")]);
  const twice = [...given, incremented(1, 42, "2027-03-02T00:00:00.000Z")];
  assert.equal(decideBilled(twice, incr(-50)).call().outcome.body, "-8", "folds its own events");
});

Deno.test("given a value that is not an integer, when incremented, then 409 and no event", () => {
  for (const value of ["abc", "", "1.5", "+1", " 1", "1e3", "12345678901234567", "0x10"]) {
    const when = decideBilled([...opened, written(value)], incr(1));
    assert.equal(when.call().outcome.status, 409, JSON.stringify(value));
    assert.deepEqual(when.events(), []);
  }
  const phrase = decideBilled([...opened, written("abc")], incr(1)).call().outcome.body;
  assert.equal(
    phrase,
    `Cannot increment "abc": the value must be an integer from -${MAX_COUNTER} to ${MAX_COUNTER}`,
  );
  assert.equal(decideBilled([...opened, written("-007")], incr(1)).call().outcome.body, "-6");
});

Deno.test("when the result would leave ±(2^53 − 1), then 409; up to the bound it is served", () => {
  const top = [...opened, written(String(MAX_COUNTER - 1))];
  assert.equal(decideBilled(top, incr(1)).call().outcome.body, String(MAX_COUNTER));
  const over = decideBilled(top, incr(2));
  assert.deepEqual([over.call().outcome.status, over.events()], [409, []]);
  assert.equal(
    over.call().outcome.body,
    `Cannot increment ${MAX_COUNTER - 1} by 2: the result must be from -${MAX_COUNTER} to ${MAX_COUNTER}`,
  );
  const bottom = [...opened, written(String(-MAX_COUNTER))];
  assert.equal(decideBilled(bottom, incr(-1)).call().outcome.status, 409);
  assert.equal(decideBilled(bottom, incr(MAX_COUNTER)).call().outcome.body, "0");
  assert.equal(decideBilled(opened, incr(-MAX_COUNTER)).call().outcome.body, String(-MAX_COUNTER));
});

Deno.test("an increment honours If-Match like a write", () => {
  const given = [...opened, written("1")];
  assert.equal(decideBilled(given, incr(1, 0, '"2"')).call().outcome.status, 412);
  assert.equal(decideBilled(given, incr(1, 0, '"3"')).call().outcome.body, "2");
});

Deno.test("the KV fold takes the value and expiry of KvIncremented, and its version", () => {
  const [event] = stream([incremented(3, 10, LATER)]);
  const row = kvProjection.evolve(undefined, event)!;
  assert.deepEqual([row.value, row.expires_at.toISOString(), row.version], ["10", LATER, 1]);
  assert.equal(kvProjection.keyOf(event), JSON.stringify([WALLET, "b", "n"]));
});

Deno.test("counterValue reads decimal integers within the bound only", () => {
  assert.deepEqual(["0", "-0", "42", "-42", String(MAX_COUNTER)].map(counterValue), [
    0,
    0,
    42,
    -42,
    MAX_COUNTER,
  ]);
  assert.deepEqual(["9007199254740992", "-", "", "4 2"].map(counterValue), [
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
  assert.ok(Object.is(counterValue("-0"), 0), "never -0");
});
