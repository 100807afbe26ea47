// The prices the dashboard's buttons state are the billing table's: a change of price in
// src/calls/prices.ts fails here until the page says the same.
import assert from "node:assert/strict";
import { KEYS, KV, SETTINGS, TOKEN, VIEWS, WEBHOOK } from "../src/calls/prices.ts";
import { priceLabel, PRICES } from "../src/http/dashboard/prices.js";

Deno.test("the dashboard states the billing table's prices", () => {
  assert.deepEqual(PRICES, {
    newToken: 0,
    kv: KV.price,
    webhook: WEBHOOK.price,
    keys: KEYS.price,
    settings: SETTINGS.price,
    logEntry: TOKEN.price,
    views: VIEWS.price,
  });
});

Deno.test("a price reads as credits, or free", () => {
  assert.equal(priceLabel(0), "free");
  assert.equal(priceLabel(1), "1 credit");
  assert.equal(priceLabel(3), "3 credits");
});
