// The token-creation rate limit per client (table `token_requests`), shared by every instance: read
// with its row locked, so two requests from one client serialize on it. A client is a network, not
// an address (src/http/client_network.ts): `client_ip` holds an IPv4 address, an IPv6 network such
// as `2001:db8:1:2::/64`, `127.0.0.0/8` for every loopback address, or `unknown`.
import type { ReadKind } from "../../projections/projection.ts";
import type { Effect } from "../ledger/command.ts";
import type { EffectApplier } from "../ledger/pending_writes.ts";

/** One token per client in this time. */
export const TOKEN_INTERVAL_MS = 10_000;
/** Stale rows each new token clears: a row older than the interval limits nothing any more. */
const STALE_ROWS_CLEARED = 10;

/** When the client last got a token; the epoch for a client never seen. */
export const lastTokenRequestRead: ReadKind<string, Date> = {
  name: "last token request",
  id: (client) => client,
  async load(sql, clients) {
    // An upsert that changes nothing locks the row, present or new, for the rest of the transaction.
    const rows = await sql<{ client_ip: string; last_at: Date }[]>`
      insert into token_requests (client_ip, last_at)
      select ip, 'epoch' from unnest(${clients}::text[]) as ip
      on conflict (client_ip) do update set client_ip = excluded.client_ip
      returning client_ip, last_at`;
    return new Map(rows.map((row) => [row.client_ip, row.last_at]));
  },
  touches: () => [],
  evolve: (at) => at,
};

export interface RecordTokenRequest extends Effect {
  type: "recordTokenRequest";
  /** The client's network, the row's key (the field keeps its first name, as the column does). */
  clientIp: string;
}

/**
 * Records the time of each new token, and clears a few rows gone stale so the table holds about
 * the clients of the last interval rather than every client ever seen. Rows another request holds
 * are skipped, never waited for.
 */
export const recordTokenRequests: EffectApplier<RecordTokenRequest> = {
  async apply(tx, effects, now) {
    const clients = effects.map((e) => e.clientIp);
    await tx`update token_requests set last_at = ${now} where client_ip = any(${clients})`;
    await tx`
      delete from token_requests where client_ip in (
        select client_ip from token_requests
        where last_at < ${new Date(now.getTime() - TOKEN_INTERVAL_MS)} and client_ip <> all(${clients})
        limit ${STALE_ROWS_CLEARED} for update skip locked)`;
  },
};
