// Given events / when a KV command / then its decision: the key-value rules without a database.
import assert from "node:assert/strict";
import { newEvent } from "../events/catalogue.ts";
import { commandOfCall, decideBilled, NOW, WALLET } from "./helpers/decider.ts";
import { MAX_TTL_SECONDS } from "../src/kv/commands.ts";
import { kvCalls } from "../src/kv/calls.ts";
import { ETAG_CONDITION, parseEtagCondition, type Preconditions } from "../src/kv/preconditions.ts";

const opened = [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" }),
];
const written = (key: string, value: string, expiresAt = "2099-01-01T00:00:00.000Z") =>
  newEvent("KvWritten", { bucket: "b", key, value, expiresAt });

const entry = (key: string) => ({ walletId: WALLET, bucket: "b", key });
const get = (key: string) => commandOfCall(kvCalls.get(entry(key)));
const remove = (key: string, conditions: Preconditions = {}) =>
  commandOfCall(kvCalls.delete({ ...entry(key), conditions }));
const writeIf = (key: string, value: string, conditions: Preconditions) =>
  commandOfCall(kvCalls.set({ ...entry(key), value, ttlSeconds: 0, conditions }));
const ifMatch = (header: string): Preconditions => ({ ifMatch: parseEtagCondition(header) });
const ifNoneMatch = (header: string): Preconditions => ({ ifNoneMatch: parseEtagCondition(header) });
const expiry = new Date(NOW.getTime() + MAX_TTL_SECONDS * 1000).toISOString();

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
    const write = commandOfCall(kvCalls.set({ ...entry("k"), value: "v", ttlSeconds }));
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

// The given streams below number their events from 1: `opened` is versions 1 and 2, so the first
// KvWritten after it is version 3 and its ETag is "3".

Deno.test("given a written key, when read, then its ETag is the version of the event that wrote it", () => {
  const first = decideBilled([...opened, written("k", "one")], get("k")).call();
  assert.equal(first.outcome.headers?.etag, '"3"');
  const rewritten = decideBilled(
    [...opened, written("k", "one"), written("other", "x"), written("k", "one")],
    get("k"),
  );
  assert.equal(
    rewritten.call().outcome.headers?.etag,
    '"5"',
    "a rewrite, even of the same value, changes it",
  );
  assert.equal(decideBilled(opened, get("k")).call().outcome.headers?.etag, undefined, "a 404 has none");
});

Deno.test("given a key at ETag 3, when written If-Match 3, then KvWritten; If-Match 4 is 412, no event", () => {
  const given = [...opened, written("k", "old")];
  assert.deepEqual(decideBilled(given, writeIf("k", "new", ifMatch('"3"'))).events(), [
    written("k", "new", expiry),
  ]);
  assert.deepEqual(decideBilled(given, writeIf("k", "new", ifMatch('"4", "3"'))).call().outcome.status, 200);
  const stale = decideBilled(given, writeIf("k", "new", ifMatch('"4"')));
  assert.deepEqual([stale.call().outcome.status, stale.call().charge], [412, undefined], "412 at the price");
  assert.match(stale.call().outcome.body, /^Precondition Failed: If-Match/);
  assert.deepEqual(stale.events(), []);
  assert.equal(decideBilled(given, writeIf("k", "new", ifMatch('W/"3"'))).call().outcome.status, 412, "weak");
});

Deno.test("given a key written twice, when written If-Match the first ETag, then 412", () => {
  const given = [...opened, written("k", "a"), written("k", "b")];
  assert.equal(decideBilled(given, writeIf("k", "c", ifMatch('"3"'))).call().outcome.status, 412);
  assert.equal(decideBilled(given, writeIf("k", "c", ifMatch('"4"'))).call().outcome.status, 200);
});

Deno.test("given no key, when written If-Match *, then 412; If-None-Match * writes it", () => {
  const missing = decideBilled(opened, writeIf("k", "v", ifMatch("*")));
  assert.deepEqual([missing.call().outcome.status, missing.events()], [412, []]);
  assert.deepEqual(decideBilled(opened, writeIf("k", "v", ifNoneMatch("*"))).events(), [
    written("k", "v", expiry),
  ]);
});

Deno.test("given a key, when written If-None-Match *, then 412 and it keeps its value", () => {
  const given = [...opened, written("k", "v")];
  const exists = decideBilled(given, writeIf("k", "other", ifNoneMatch("*")));
  assert.deepEqual([exists.call().outcome.status, exists.events()], [412, []]);
  assert.equal(exists.call().outcome.body, "Precondition Failed: If-None-Match: * but the key exists");
  assert.equal(decideBilled(given, writeIf("k", "v2", ifMatch("*"))).call().outcome.status, 200);
});

Deno.test("given a key deleted and written again, when written If-Match its old ETag, then 412", () => {
  const given = [
    ...opened,
    written("k", "v"),
    newEvent("KvDeleted", { bucket: "b", key: "k" }),
    written("k", "v"),
  ];
  assert.equal(decideBilled(given, writeIf("k", "w", ifMatch('"3"'))).call().outcome.status, 412);
  assert.equal(decideBilled(given, writeIf("k", "w", ifMatch('"5"'))).call().outcome.status, 200);
});

Deno.test("given a key, when deleted If-Match a stale ETag, then 412; with the current one, KvDeleted", () => {
  const given = [...opened, written("k", "a"), written("k", "b")];
  const stale = decideBilled(given, remove("k", ifMatch('"3"')));
  assert.deepEqual([stale.call().outcome.status, stale.events()], [412, []]);
  assert.deepEqual(decideBilled(given, remove("k", ifMatch('"4"'))).events(), [
    newEvent("KvDeleted", { bucket: "b", key: "k" }),
  ]);
  assert.equal(
    decideBilled(opened, remove("k", ifMatch("*"))).call().outcome.status,
    412,
    "missing: 412, not 404",
  );
});

Deno.test("If-Match and If-None-Match take * or a list of quoted ETags, nothing else", () => {
  for (const good of ["*", '"3"', ' "3" , W/"4","5" ', '""']) assert.ok(ETAG_CONDITION.test(good), good);
  for (const bad of ["3", '"3', "**", '"3" "4"', '*, "3"', "", 'w/"3"']) {
    assert.ok(!ETAG_CONDITION.test(bad), bad);
  }
  assert.deepEqual(parseEtagCondition(' "3" , W/"4"'), {
    any: false,
    tags: [{ weak: false, opaque: "3" }, { weak: true, opaque: "4" }],
  });
  assert.deepEqual(parseEtagCondition(" * "), { any: true });
});
