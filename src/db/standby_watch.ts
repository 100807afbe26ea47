// The operator's signal that the database runs without its synchronous standby. On a highly
// available layout (a DATABASE_URL naming several hosts) a commit is acknowledged only once a
// standby has it, through synchronous_standby_names. pg_auto_failover empties that setting when it
// loses the standby (the primary goes on alone, "wait_primary"), so commits are then on one machine
// only until the standby is back: /readyz says so in its body (still 200, the service works) and
// the first /readyz that sees the change logs it, as does the one that sees it end.
import type { Queryable } from "./connect.ts";
import { log } from "../log.ts";

export const NO_SYNC_STANDBY = "no synchronous standby: commits are acknowledged before any standby has them";

/** True when `databaseUrl` names several hosts (libpq's host list). */
export function isMultiHost(databaseUrl: string | undefined): boolean {
  if (!databaseUrl) return false;
  const authority = databaseUrl.replace(/^[a-z]+:\/\//i, "").split(/[/?#]/)[0];
  return authority.slice(authority.lastIndexOf("@") + 1).includes(",");
}

let lastAlone: boolean | undefined;

/**
 * Asks the primary whether a commit waits for a standby; returns the detail to show when it does
 * not (undefined when it does), logging a change of state once per process.
 */
export async function standbyDetail(sql: Queryable): Promise<string | undefined> {
  const [row] = await sql<{ names: string }[]>`
    select current_setting('synchronous_standby_names') as names`;
  const alone = row.names.trim() === "";
  if (alone !== lastAlone) {
    if (alone) log("warn", `database: ${NO_SYNC_STANDBY}`, { synchronousStandbyNames: row.names });
    else if (lastAlone) {
      log("info", "database: a synchronous standby again", { synchronousStandbyNames: row.names });
    }
    lastAlone = alone;
  }
  return alone ? NO_SYNC_STANDBY : undefined;
}
