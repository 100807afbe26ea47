// The context every route sees: what the service depends on and what middleware found out.
import type { Sql } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { LogEndpoint } from "../../projections/call_logs.ts";

/** What a route costs and where its calls are logged (declared with billing() in its middleware). */
export interface RouteBilling {
  price: number;
  endpoint: LogEndpoint;
}

export interface Services {
  sql: Sql;
  ledger: Ledger;
  clock: Clock;
  config: Config;
}

export interface AppEnv {
  Bindings: { remoteAddr?: { hostname: string } };
  Variables: {
    services: Services;
    requestId: string;
    startedAt: number;
    /** The SHA-256 of the caller's token, set by requireWallet. */
    walletId?: string;
    /** The route's price and call-log endpoint, set by billing(). */
    billing?: RouteBilling;
  };
}
