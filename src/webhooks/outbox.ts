// The delivery outbox (table `webhook_deliveries`): what must be sent, and for 7 days what was. A
// row is written by the `queueDelivery` effect in the transaction of the fact that causes it (an
// accepted email, a fired run, an alert), so a delivery survives any crash after the commit;
// workers claim due rows with a lease, and the attempt's result moves the row in its own
// transaction (outbox_effects.ts). A finished row keeps its payload, the body last sent and the
// receivers' answers, so it can be shown and sent again, until its time partition is dropped.
import type { Queryable, Sql } from "../db/connect.ts";
import { DELIVERY_RETENTION_MS } from "../../projections/delivery_retention_rules.ts";
import { type ReadKind, rowId } from "../../projections/projection.ts";
import type { Effect } from "../ledger/command.ts";
import type { EffectApplier } from "../ledger/pending_writes.ts";
import type { EmailPayload, ScheduledRunPayload } from "./payloads.ts";
import type { AttachmentRef } from "../attachments/signed_link.ts";
import { randomId } from "../ids.ts";

/** Email and scheduled deliveries go to a webhook; alerts to the wallet's alert webhook or email. */
export type DeliveryKind = "email" | "scheduled" | "alert_webhook" | "alert_email";

/** An email as queued: attachments are references, their links are signed at each attempt. */
export type QueuedEmail = Omit<EmailPayload, "attachments"> & { attachments: AttachmentRef[] };

/** What is delivered: the kind decides the target, the retry policy and how the body is rendered. */
export type DeliveryContent =
  /** Rendered through the webhook's format at each attempt. */
  | { kind: "email"; webhookId: string; payload: QueuedEmail }
  /** Sent as is, once: the next run comes instead of a retry. */
  | { kind: "scheduled"; webhookId: string; payload: ScheduledRunPayload }
  /** A notice of the service to the wallet's alert target, retried like email. */
  | { kind: "alert_webhook" | "alert_email"; webhookId?: undefined; payload: Record<string, unknown> };

export type NewDelivery = DeliveryContent & {
  /** `dlv_` + random: the outbox row. */
  id: string;
  walletId: string;
  /** The `webhook-id` header, the same on every attempt. A run's is derived from its planned time. */
  messageId: string;
  /** Credits the cause was charged (2 or 5 for an email, 2 for a run); shown on the first attempt's log entry. */
  cost: number;
};

export type ClaimedDelivery = NewDelivery & {
  /** Attempts made before this claim. */
  attempts: number;
  claimToken: string;
};

export function newDeliveryId(): string {
  return `dlv_${randomId(24)}`;
}

export function newMessageId(): string {
  return `msg_${randomId(24)}`;
}

export interface QueueDelivery extends Effect {
  type: "queueDelivery";
  delivery: NewDelivery;
  /** Its webhook is paused: the row waits, with no attempt planned, until it resumes. */
  held?: boolean;
}

export function queueDelivery(delivery: NewDelivery, options: { held?: boolean } = {}): QueueDelivery {
  // The id is signed as "id.timestamp.body": a "." would make the signed content ambiguous.
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(delivery.messageId)) {
    throw new Error(`Invalid delivery message id "${delivery.messageId}"`);
  }
  if (!Number.isInteger(delivery.cost) || delivery.cost < 0) {
    throw new Error(`Invalid delivery cost ${delivery.cost}`);
  }
  return { type: "queueDelivery", delivery, ...(options.held ? { held: true } : {}) };
}

/** Inserts the queued rows, first attempt due at once; `onQueued` hears of them after the commit. */
export function queueDeliveries(onQueued: () => void = () => {}): EffectApplier<QueueDelivery> {
  return {
    async apply(tx, effects, now) {
      const rows = effects.map(({ delivery: d, held }) => ({
        wallet_id: d.walletId,
        id: d.id,
        webhook_id: d.webhookId ?? null,
        kind: d.kind,
        payload: d.payload,
        message_id: d.messageId,
        cost: d.cost,
        held: held === true,
      }));
      const expiresAt = new Date(now.getTime() + DELIVERY_RETENTION_MS);
      await tx`
        insert into webhook_deliveries (wallet_id, id, webhook_id, kind, payload, message_id, cost, next_attempt_at,
                                        held, created_at, expires_at)
        select x.wallet_id, x.id, x.webhook_id, x.kind, x.payload, x.message_id, x.cost,
               case when x.held then null else ${now}::timestamptz end, x.held, ${now}, ${expiresAt}
        from jsonb_to_recordset(${tx.json(rows as never)}) as x(
          wallet_id text, id text, webhook_id text, kind text, payload jsonb, message_id text, cost integer,
          held boolean)`;
    },
    afterCommit: () => onQueued(),
  };
}

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

export interface ClaimKey {
  walletId: string;
  id: string;
  claimToken: string;
}

/**
 * Whether a claim still holds its row, locked for the rest of the attempt's transaction; false when
 * the lease ran out and another instance took the row, which then owns it.
 */
export const deliveryClaimRead: ReadKind<ClaimKey, true> = {
  name: "delivery claim",
  id: (key) => rowId(["walletId", "id", "claimToken"], key),
  async load(sql: Queryable, keys) {
    const rows = await sql<ClaimKey[]>`
      select d.wallet_id as "walletId", d.id, d.claim_token as "claimToken"
      from unnest(${keys.map((k) => k.walletId)}::text[], ${keys.map((k) => k.id)}::text[],
                  ${keys.map((k) => k.claimToken)}::text[]) as x(w, id, t)
      cross join lateral (select * from webhook_deliveries e
                          where e.wallet_id = x.w and e.id = x.id and e.claim_token = x.t for update) d`;
    return new Map(rows.map((key) => [deliveryClaimRead.id(key), true as const]));
  },
  touches: () => [],
  evolve: (held) => held,
};
