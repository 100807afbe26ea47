import assert from "node:assert/strict";
import { ActiveWalletCache } from "../src/calls/wallet_cache.ts";

Deno.test("the active-wallet cache is bounded in size and age", () => {
  const cache = new ActiveWalletCache(2, 1000);
  cache.remember("a", 0);
  cache.remember("b", 10);
  cache.remember("c", 20);
  assert.equal(cache.size, 2);
  assert.equal(cache.has("a", 30), false, "the oldest entry left");
  assert.equal(cache.has("b", 30), true);
  assert.equal(cache.has("b", 1011), false, "too old");
  cache.evict("c");
  assert.equal(cache.has("c", 30), false);
});
