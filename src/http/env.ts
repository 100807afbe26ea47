// The context every route sees: what the service depends on and what middleware found out.
import type { Services } from "../calls/services.ts";
import type { RouteBilling } from "../calls/prices.ts";

export interface AppEnv {
  Bindings: { remoteAddr?: { hostname: string } };
  Variables: {
    services: Services;
    /** The service's own id of the request (request_id.ts). */
    requestId: string;
    /** The client's well-formed X-Request-Id, logged beside ours, never instead of it. */
    clientRequestId?: string;
    startedAt: number;
    /** The SHA-256 of the caller's token, set by requireWallet; a scoped key's wallet for a key. */
    walletId?: string;
    /** Set by requireWallet when the caller presented a scoped key: its id and its hash. */
    key?: { keyId: string; hash: string };
    /** The route's price and call-log endpoint, set by billing(). */
    billing?: RouteBilling;
  };
}
