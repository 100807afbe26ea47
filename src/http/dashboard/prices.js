// @ts-check
// What each call the page makes costs, in credits, as the service's billing table
// (src/calls/prices.ts) declares it; tests/dashboard_prices_test.ts holds the two equal. Each button
// states its price from here before the call, and the status line the X-Cost and X-Balance after.

export const PRICES = Object.freeze({
  /** POST /token: free, one a client address every 10 seconds. */
  newToken: 0,
  /** Every key-value call: list, read, write, delete, increment. */
  kv: 1,
  /** Every webhook call: list, create, edit, test, pause, delete, deliveries, retry, recover. */
  webhook: 1,
  /** Listing, creating and revoking scoped keys. */
  keys: 1,
  /** Loading or saving the alert settings. */
  settings: 1,
  /** GET /token/logs: per entry returned. */
  logEntry: 1,
  /** Balance, usage, ledger and recharge links. */
  views: 0,
});

/** `1 credit`, `2 credits`, `free`. */
export function priceLabel(/** @type {number} */ credits) {
  if (credits === 0) return "free";
  return `${credits} credit${credits === 1 ? "" : "s"}`;
}
