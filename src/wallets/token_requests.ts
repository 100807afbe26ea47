// The token-creation rate limit per client address (table `token_requests`), shared by every
// instance: read with its row locked, so two requests from one address serialize on it.
import type { ReadKind } from "../../projections/projection.ts";
import type { Effect } from "../ledger/command.ts";
import type { EffectApplier } from "../ledger/pending_writes.ts";

/** When the address last got a token; the epoch for an address never seen. */
export const lastTokenRequestRead: ReadKind<string, Date> = {
  name: "last token request",
  id: (clientIp) => clientIp,
  async load(sql, clientIps) {
    // An upsert that changes nothing locks the row, present or new, for the rest of the transaction.
    const rows = await sql<{ client_ip: string; last_at: Date }[]>`
      insert into token_requests (client_ip, last_at)
      select ip, 'epoch' from unnest(${clientIps}::text[]) as ip
      on conflict (client_ip) do update set client_ip = excluded.client_ip
      returning client_ip, last_at`;
    return new Map(rows.map((row) => [row.client_ip, row.last_at]));
  },
  touches: () => [],
  evolve: (at) => at,
};

export interface RecordTokenRequest extends Effect {
  type: "recordTokenRequest";
  clientIp: string;
}

export const recordTokenRequests: EffectApplier<RecordTokenRequest> = {
  async apply(tx, effects, now) {
    await tx`update token_requests set last_at = ${now} where client_ip = any(${
      effects.map((e) => e.clientIp)
    })`;
  },
};
