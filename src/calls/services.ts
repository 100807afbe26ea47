// What every transport's calls run against: the database, the ledger, the clock and the
// configuration, handed to REST (AppEnv) and to MCP (each tool call).
import type { Sql } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";

export interface Services {
  sql: Sql;
  ledger: Ledger;
  clock: Clock;
  config: Config;
}
