// The billing table: what each billed route costs, where its calls are logged and what it needs of
// a scoped key, declared once here for REST (billing() in a route's middleware) and MCP alike.
import type { LogEndpoint } from "../../projections/call_logs.ts";
import type { KeyAccess } from "./key_gate.ts";
import { type CallTarget, kvKeyAccess } from "./key_access.ts";

/** What a route costs and where its calls are logged. */
export interface RouteBilling {
  price: number;
  endpoint: LogEndpoint;
  /** What the call needs of a scoped key; absent: keys may not call the route (403). */
  keys?: (target: CallTarget) => KeyAccess;
}

/** Open to scoped keys: `read` keys GET and list, `write` keys also POST, DELETE and incr, in their buckets. */
export const KV: RouteBilling = { price: 1, endpoint: "kv", keys: kvKeyAccess };
/** GET /token and GET /token/logs. */
export const TOKEN: RouteBilling = { price: 1, endpoint: "token" };
export const RECHARGE: RouteBilling = { price: 0, endpoint: "token" };
export const ERASE: RouteBilling = { price: 0, endpoint: "token" };
/** Free like /recharge, and logged with the other token calls (they keep a token alive alike). */
export const VIEWS: RouteBilling = { price: 0, endpoint: "token" };
export const SETTINGS: RouteBilling = { price: 1, endpoint: "token" };
export const KEYS: RouteBilling = { price: 1, endpoint: "token" };
/** The webhook routes and their deliveries. */
export const WEBHOOK: RouteBilling = { price: 1, endpoint: "webhook" };
/** GET /kv, the wallet's bucket names: the wallet's token only, since a key sees only its buckets. */
export const KV_BUCKETS: RouteBilling = { price: 1, endpoint: "kv" };
