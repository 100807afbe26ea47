// Given a budget per key / when keys call at given times / then what fits and how long the rest
// waits; and the bounded cache of hashes that named nothing.
import assert from "node:assert/strict";
import { KeyedRateLimit, retryAfterSeconds } from "../src/calls/rate_limit.ts";
import { RecentCache } from "../src/calls/wallet_cache.ts";

Deno.test("a key makes perWindow calls at once, then one every windowMs / perWindow", () => {
  const limit = new KeyedRateLimit({ perWindow: 3, windowMs: 60_000, maxKeys: 10 });
  assert.deepEqual([0, 0, 0].map(() => limit.take("a", 0)), [0, 0, 0]);
  assert.equal(limit.take("a", 0), 20_000, "the fourth waits for one interval");
  assert.equal(limit.take("a", 5_000), 15_000, "a refused call counts nothing");
  assert.equal(limit.take("a", 20_000), 0);
  assert.equal(limit.take("a", 20_000), 20_000);
  assert.equal(limit.take("b", 20_000), 0, "another key has its own budget");
  assert.equal(limit.take("a", 100_000), 0, "after a quiet window the budget is whole again");
  assert.equal(limit.take("a", 100_000), 0);
  assert.equal(limit.take("a", 100_000), 0);
  assert.ok(limit.take("a", 100_000) > 0);
});

Deno.test("a call given back is not counted", () => {
  const limit = new KeyedRateLimit({ perWindow: 2, windowMs: 1_000, maxKeys: 10 });
  for (let i = 0; i < 10; i++) {
    assert.equal(limit.take("a", 0), 0);
    limit.giveBack("a", 0);
  }
  assert.equal(limit.take("a", 0), 0);
  assert.equal(limit.take("a", 0), 0);
  assert.ok(limit.take("a", 0) > 0);
});

Deno.test("past maxKeys, idle keys are forgotten, and new keys share one budget while all are busy", () => {
  const limit = new KeyedRateLimit({ perWindow: 2, windowMs: 1_000, maxKeys: 3 });
  for (const key of ["a", "b", "c"]) assert.equal(limit.take(key, 0), 0);
  assert.equal(limit.take("d", 0), 0, "d and e share the overflow budget");
  assert.equal(limit.take("e", 0), 0);
  assert.ok(limit.take("f", 0) > 0, "the shared budget is spent");
  assert.equal(limit.size, 4, "three keys and the shared one");
  assert.equal(limit.take("g", 2_000), 0, "once idle, keys make room");
  assert.ok(limit.size <= 4);
  assert.equal(limit.take("g", 2_000), 0);
  assert.ok(limit.take("g", 2_000) > 0, "g has a budget of its own");
});

Deno.test("Retry-After is whole seconds, at least 1", () => {
  assert.deepEqual([1, 999, 1000, 1001, 19_500].map(retryAfterSeconds), [1, 1, 1, 2, 20]);
});

Deno.test("the cache of unknown hashes is bounded in size and age", () => {
  const unknown = new RecentCache<string>(2, 1000);
  unknown.remember("a", "Unauthorized", 0);
  unknown.remember("b", "Key revoked", 0);
  unknown.remember("c", "Unauthorized", 0);
  assert.equal(unknown.size, 2);
  assert.equal(unknown.get("a", 1), undefined);
  assert.equal(unknown.get("b", 1), "Key revoked");
  assert.equal(unknown.get("b", 1001), undefined);
});
