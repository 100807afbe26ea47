// The fair claim of due deliveries from the outbox (outbox.ts): a walk of the endpoints with due
// rows, one index descent each, and a claim in turns between wallets, each wallet and each of its
// endpoints within its share of the delivery slots, under a lease. Several instances claim at once
// with SKIP LOCKED; a lease that runs out hands the row to another.
import type { Sql } from "../db/connect.ts";
import type { ClaimedDelivery, DeliveryKind, NewDelivery } from "./outbox.ts";
import { randomId } from "../ids.ts";

interface DeliveryRow {
  wallet_id: string;
  id: string;
  webhook_id: string | null;
  kind: DeliveryKind;
  payload: unknown;
  message_id: string;
  cost: number;
  attempts: number;
  claim_token: string;
}

/** Where a delivery goes, for the per-endpoint share: its webhook, or the alert channel of its kind. */
export function endpointOf(delivery: Pick<NewDelivery, "webhookId" | "kind">): string {
  return delivery.webhookId ?? delivery.kind;
}

/** One endpoint of one wallet; neither a wallet id nor an endpoint holds a "/". */
export function endpointKey(walletId: string, endpoint: string): string {
  return `${walletId}/${endpoint}`;
}

/** The most slots one wallet, and one endpoint of a wallet, may hold in an instance. */
export interface SlotShares {
  perWallet: number;
  perEndpoint: number;
}

/** Attempts in flight in this instance, per wallet and per endpoint of a wallet (`endpointKey`). */
export interface SlotsInUse {
  wallets: ReadonlyMap<string, number>;
  endpoints: ReadonlyMap<string, number>;
}

const NO_SLOTS_IN_USE: SlotsInUse = { wallets: new Map(), endpoints: new Map() };

/** An endpoint of a wallet with due deliveries, as the walk finds it. */
export interface DueEndpoint {
  walletId: string;
  endpoint: string;
}

/** Where a walk starts: after this endpoint of this wallet, or after the whole wallet. */
export interface WalkStart {
  walletId: string;
  endpoint: string;
  /** Skip the rest of `walletId`: it was served last. */
  nextWallet?: boolean;
}

/** The start of the walk: before every wallet. */
export const WALK_FROM_START: WalkStart = { walletId: "", endpoint: "" };

/**
 * The endpoints with due rows, in (wallet id, endpoint) order after `after`, at most `limit`: one
 * index descent each (a recursive walk of webhook_deliveries_endpoint_due_idx), so an endpoint with
 * 10,000 due rows costs the walk what one with a single row does. Within a wallet the walk stops
 * once it has found as many endpoints with room as the wallet has free slots, and a wallet at its
 * share is passed at once; endpoints at their share are listed but not counted. Rows in flight
 * count as due here: the claim leaves them out.
 */
export async function endpointsWithDueDeliveries(
  sql: Sql,
  options: { now: Date; after: WalkStart; limit: number; shares: SlotShares; inUse?: SlotsInUse },
): Promise<DueEndpoint[]> {
  const { now, after, limit, shares } = options;
  const inUse = options.inUse ?? NO_SLOTS_IN_USE;
  const busy = [...inUse.wallets.entries()];
  const full = [...inUse.endpoints.entries()].filter(([, n]) => n >= shares.perEndpoint).map(([key]) => key);
  const rows = await sql<{ wallet_id: string; endpoint: string }[]>`
    with due as (
      with recursive walk(wallet_id, endpoint, k, n) as (
        (select d.wallet_id, coalesce(d.webhook_id, d.kind), 0, 1 from webhook_deliveries d
         where ${
    after.nextWallet
      ? sql`d.wallet_id > ${after.walletId}`
      : sql`(d.wallet_id, coalesce(d.webhook_id, d.kind)) > (${after.walletId}::text, ${after.endpoint}::text)`
  }
           and d.next_attempt_at <= ${now}
         order by d.wallet_id, coalesce(d.webhook_id, d.kind), d.next_attempt_at limit 1)
        union all
        select step.pair[1], step.pair[2],
               case when step.pair[1] = walk.wallet_id then walk.k + here.counted else 0 end, walk.n + 1
        from walk
        cross join lateral (
          select case when walk.wallet_id || '/' || walk.endpoint = any(${full}::text[]) then 0 else 1 end as counted,
                 ${shares.perWallet}::int - coalesce((select b.n from unnest(${busy.map((b) => b[0])}::text[],
                   ${
    busy.map((b) => b[1])
  }::int[]) as b(wallet_id, n) where b.wallet_id = walk.wallet_id), 0) as free
        ) here
        cross join lateral (
          select case when walk.k + here.counted >= here.free
            then (select array[d.wallet_id, coalesce(d.webhook_id, d.kind)] from webhook_deliveries d
                  where d.wallet_id > walk.wallet_id and d.next_attempt_at <= ${now}
                  order by d.wallet_id, coalesce(d.webhook_id, d.kind), d.next_attempt_at limit 1)
            else (select array[d.wallet_id, coalesce(d.webhook_id, d.kind)] from webhook_deliveries d
                  where (d.wallet_id, coalesce(d.webhook_id, d.kind)) > (walk.wallet_id, walk.endpoint)
                    and d.next_attempt_at <= ${now}
                  order by d.wallet_id, coalesce(d.webhook_id, d.kind), d.next_attempt_at limit 1)
            end as pair
          -- A fence: the step's next endpoint is looked up once, not once per use of it.
          offset 0
        ) step
        where walk.n < ${limit} and step.pair is not null)
      select wallet_id, endpoint, n from walk)
    select wallet_id, endpoint from due order by n`;
  return rows.map((row) => ({ walletId: row.wallet_id, endpoint: row.endpoint }));
}

/** How a claim shares out the slots; by default one wallet could take them all. */
export interface ClaimOptions {
  now: Date;
  /** Free slots: rows claimed at most. */
  limit: number;
  leaseMs: number;
  /** The endpoints to claim from, in turn order; by default the walk's first ones. */
  endpoints?: DueEndpoint[];
  shares?: SlotShares;
  inUse?: SlotsInUse;
}

/**
 * Claims up to `limit` due deliveries of `endpoints` for `leaseMs`, in turns: each wallet's oldest
 * due row first, wallets in the order of their first endpoint, then each one's second, and so on,
 * so a wallet with many due rows never fills a claim before a wallet with one. A wallet gets at
 * most its share of slots and each of its endpoints (a webhook, an alert channel) at most its own,
 * counting the attempts `inUse` holds. Within an endpoint rows go by due time and, among those due
 * together, oldest first; a resumed webhook's backlog goes one row at a time, in creation order. SKIP LOCKED lets several instances claim at once
 * without waiting on or taking each other's rows; the lease keeps a claimed row away from them
 * afterwards, and hands it to another instance if this one dies before recording the attempt.
 */
export async function claimDueDeliveries(sql: Sql, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  const { now, limit, leaseMs } = options;
  const shares = options.shares ?? { perWallet: limit, perEndpoint: limit };
  const inUse = options.inUse ?? NO_SLOTS_IN_USE;
  const endpoints = options.endpoints ??
    await endpointsWithDueDeliveries(sql, { now, after: WALK_FROM_START, limit, shares, inUse });
  if (endpoints.length === 0 || limit <= 0) return [];
  const busyWallets = [...inUse.wallets.entries()];
  const busyEndpoints = [...inUse.endpoints.entries()];
  const token = randomId(20);
  // Each endpoint's rows are read by a range that starts at its first one, in index order, and
  // stops after perEndpoint of them: never more, however many it has.
  const rows = await sql<(DeliveryRow & { turn: string; ord: string })[]>`
    with due as (
      select t.wallet_id, t.endpoint, t.ord,
             ${shares.perWallet}::int - coalesce(w.n, 0) as wallet_free,
             ${shares.perEndpoint}::int - coalesce(e.n, 0) as endpoint_free
      from unnest(${endpoints.map((e) => e.walletId)}::text[], ${endpoints.map((e) => e.endpoint)}::text[])
        with ordinality as t(wallet_id, endpoint, ord)
      left join unnest(${busyWallets.map((b) => b[0])}::text[], ${busyWallets.map((b) => b[1])}::int[])
        as w(wallet_id, n) on w.wallet_id = t.wallet_id
      left join unnest(${busyEndpoints.map((b) => b[0])}::text[], ${busyEndpoints.map((b) => b[1])}::int[])
        as e(key, n) on e.key = t.wallet_id || '/' || t.endpoint),
    candidates as (
      select c.wallet_id, c.id, c.expires_at, c.next_attempt_at, c.created_at, due.wallet_free,
             min(due.ord) over (partition by c.wallet_id) as wallet_ord,
             row_number() over (partition by c.wallet_id, c.endpoint order by c.next_attempt_at, c.created_at, c.id)
               as endpoint_turn, due.endpoint_free
      from due cross join lateral (
        (select d.wallet_id, coalesce(d.webhook_id, d.kind) as endpoint, d.webhook_id, d.id, d.expires_at,
                d.next_attempt_at, d.created_at
         from webhook_deliveries d
         where (d.wallet_id, coalesce(d.webhook_id, d.kind)) >= (due.wallet_id, due.endpoint)
           and d.next_attempt_at <= ${now} and (d.locked_until is null or d.locked_until <= ${now})
         order by d.wallet_id, coalesce(d.webhook_id, d.kind), d.next_attempt_at, d.created_at
         limit ${shares.perEndpoint})
        union
        -- The oldest due row of a resumed webhook's backlog, which a retry may have put behind
        -- the newer ones in due time (by the small index of resumed rows).
        (select d.wallet_id, coalesce(d.webhook_id, d.kind), d.webhook_id, d.id, d.expires_at, d.next_attempt_at,
                d.created_at
         from webhook_deliveries d
         where d.resumed and d.wallet_id = due.wallet_id and d.webhook_id = due.endpoint
           and d.next_attempt_at <= ${now} and (d.locked_until is null or d.locked_until <= ${now})
         order by d.created_at, d.id limit 1)) c
      where due.wallet_free > 0 and due.endpoint_free > 0
        and c.wallet_id = due.wallet_id and c.endpoint = due.endpoint
        -- A resumed webhook's backlog goes one at a time, oldest first (migration 023): nothing of
        -- the webhook is taken while an older resumed row waits, is in flight or awaits its retry.
        -- Checked on these few candidates only, by the small index of resumed rows.
        and not exists (
          select 1 from webhook_deliveries r
          where r.resumed and r.wallet_id = c.wallet_id and r.webhook_id = c.webhook_id
            and (r.created_at, r.id) < (c.created_at, c.id))),
    turns as (
      select c.wallet_id, c.id, c.expires_at, c.wallet_ord, c.wallet_free,
             row_number() over (partition by c.wallet_id order by c.next_attempt_at, c.created_at, c.id) as turn
      from candidates c where c.endpoint_turn <= c.endpoint_free),
    chosen as (
      select wallet_id, id, expires_at, turn, wallet_ord from turns where turn <= wallet_free
      order by turn, wallet_ord limit ${limit}),
    locked as (
      select d.wallet_id, d.id, d.expires_at, chosen.turn, chosen.wallet_ord
      from webhook_deliveries d join chosen on d.wallet_id = chosen.wallet_id and d.id = chosen.id
        and d.expires_at = chosen.expires_at
      where d.next_attempt_at <= ${now} and (d.locked_until is null or d.locked_until <= ${now})
      for update of d skip locked)
    update webhook_deliveries d
    set locked_until = ${new Date(now.getTime() + leaseMs)}, claim_token = ${token}
    from locked where d.wallet_id = locked.wallet_id and d.id = locked.id and d.expires_at = locked.expires_at
    returning d.wallet_id, d.id, d.webhook_id, d.kind, d.payload, d.message_id, d.cost, d.attempts, d.claim_token,
              locked.turn, locked.wallet_ord as ord`;
  // UPDATE ... RETURNING keeps no order: the attempts start in the order of the turns.
  rows.sort((a, b) => Number(a.turn) - Number(b.turn) || Number(a.ord) - Number(b.ord));
  return rows.map((row) =>
    ({
      walletId: row.wallet_id,
      id: row.id,
      kind: row.kind,
      ...(row.webhook_id === null ? {} : { webhookId: row.webhook_id }),
      payload: row.payload,
      messageId: row.message_id,
      cost: row.cost,
      attempts: row.attempts,
      claimToken: row.claim_token,
    }) as ClaimedDelivery
  );
}
