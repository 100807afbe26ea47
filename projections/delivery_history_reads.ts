// The reads of the delivery history that commands declare: a page of a webhook's deliveries, one
// delivery with what the outbox keeps beside it, and the failed ones of a window. Each joins the
// webhook (only the deliveries of the webhook as it exists now, not of a deleted one of the same
// id), its health (a pending email of a paused webhook is `paused`) and the outbox row (the
// receivers' answers, the payload). Snapshots taken in the batch's lock round trip.
import type { Queryable } from "../src/db/connect.ts";
import { type ReadKind, rowId } from "./projection.ts";
import type { DeliveryHistoryRow } from "./delivery_history.ts";

/** Statuses the API shows: the stored ones, and `paused`. */
export const DELIVERY_STATUSES = ["pending", "delivered", "failed", "abandoned", "paused"] as const;
export type DeliveryStatus = typeof DELIVERY_STATUSES[number];

/** A delivery as shown: its row, its status now and the answers kept beside it. */
export interface DeliveryRecord {
  row: DeliveryHistoryRow;
  status: DeliveryStatus;
  excerpts: Map<string, string>;
}

/** One delivery with its payload: the body last sent (null before the first attempt). */
export interface DeliveryDetail extends DeliveryRecord {
  sentBody: string | null;
  /** The outbox still has its payload, so it can be sent again. */
  kept: boolean;
  /** What the outbox will render and send (the email as queued, the run); read for one delivery only. */
  content?: unknown;
}

type JoinedRow = DeliveryHistoryRow & {
  shown_status: DeliveryStatus;
  responses: { attemptId: string; excerpt: string }[] | null;
  sent_body: string | null;
  kept: boolean;
  content?: unknown;
};

function record(row: JoinedRow): DeliveryDetail {
  const { shown_status, responses, sent_body, kept, content, ...history } = row;
  return {
    row: history,
    status: shown_status,
    excerpts: new Map((responses ?? []).map((r) => [r.attemptId, r.excerpt])),
    sentBody: sent_body,
    kept,
    ...(content !== undefined ? { content } : {}),
  };
}

/**
 * The deliveries of one webhook as it exists now, live, with their shown status and answers; with
 * `content`, the outbox's payload too (one delivery's: a page would carry up to 100 emails).
 */
function joined(
  sql: Queryable,
  walletId: string,
  webhookId: string,
  options: { now: Date; content?: boolean },
) {
  const now = options.now;
  return sql`
    select d.*, o.responses, o.sent_body, o.id is not null as kept${
    options.content ? sql`, o.payload as content` : sql``
  },
           case when d.status = 'pending' and d.kind = 'email' and h.paused_at is not null then 'paused'
                else d.status end as shown_status
    from delivery_history d
    join webhooks w on w.wallet_id = d.wallet_id and w.webhook_id = d.webhook_id and d.created_at >= w.created_at
    left join webhook_health h on h.wallet_id = d.wallet_id and h.webhook_id = d.webhook_id
    left join webhook_deliveries o on o.wallet_id = d.wallet_id and o.id = d.delivery_id
                                  and o.expires_at = d.expires_at
    where d.wallet_id = ${walletId} and d.webhook_id = ${webhookId} and d.expires_at > ${now}`;
}

/** Where a page starts: after the delivery it names, newest first. */
export interface PageCursor {
  createdAt: string;
  deliveryId: string;
}

export interface PageKey {
  walletId: string;
  webhookId: string;
  status?: DeliveryStatus;
  limit: number;
  after?: PageCursor;
}

/** A page of deliveries, newest first, and one more when there is a next page. */
export const deliveryPageRead: ReadKind<PageKey, DeliveryRecord[]> = {
  name: "delivery page",
  id: (key) => rowId(["walletId", "webhookId", "status", "limit", "after"], key),
  async load(sql, keys, now) {
    const pages = await Promise.all(keys.map(async (key) => {
      const rows = await sql<JoinedRow[]>`
        select * from (${joined(sql, key.walletId, key.webhookId, { now })}) p
        where true
          ${key.status ? sql`and shown_status = ${key.status}` : sql``}
          ${
        key.after
          ? sql`and (created_at, delivery_id) < (${new Date(key.after.createdAt)}, ${key.after.deliveryId})`
          : sql``
      }
        order by created_at desc, delivery_id desc limit ${key.limit + 1}`;
      return rows.map(record);
    }));
    return new Map(keys.map((key, i) => [deliveryPageRead.id(key), pages[i]]));
  },
  touches: () => [],
  evolve: (page) => page,
};

export interface DeliveryKey {
  walletId: string;
  webhookId: string;
  /** The id the API shows: the `webhook-id` header value. */
  messageId: string;
}

/** One delivery by the id the API shows. */
export const deliveryDetailRead: ReadKind<DeliveryKey, DeliveryDetail> = {
  name: "delivery detail",
  id: (key) => rowId(["walletId", "webhookId", "messageId"], key),
  async load(sql, keys, now) {
    const found = await Promise.all(keys.map(async (key) => {
      const [row] = await sql<JoinedRow[]>`
        select * from (${joined(sql, key.walletId, key.webhookId, { now, content: true })}) p
        where message_id = ${key.messageId} or (message_id is null and delivery_id = ${key.messageId})
        order by created_at desc limit 1`;
      return row && record(row);
    }));
    return new Map(keys.flatMap((key, i) => found[i] ? [[deliveryDetailRead.id(key), found[i]!]] : []));
  },
  touches: () => [],
  evolve: (detail) => detail,
};

export interface WindowKey {
  walletId: string;
  webhookId: string;
  since: string;
  until: string;
  limit: number;
}

/** The failed and abandoned email and run deliveries created in [since, until), oldest first. */
export const recoverableRead: ReadKind<WindowKey, DeliveryDetail[]> = {
  name: "recoverable deliveries",
  id: (key) => rowId(["walletId", "webhookId", "since", "until", "limit"], key),
  async load(sql, keys, now) {
    const found = await Promise.all(keys.map(async (key) => {
      const rows = await sql<JoinedRow[]>`
        select * from (${joined(sql, key.walletId, key.webhookId, { now })}) p
        where status in ('failed', 'abandoned') and kind in ('email', 'scheduled') and kept
          and created_at >= ${new Date(key.since)} and created_at < ${new Date(key.until)}
        order by created_at, delivery_id limit ${key.limit}`;
      return rows.map(record);
    }));
    return new Map(keys.map((key, i) => [recoverableRead.id(key), found[i]]));
  },
  touches: () => [],
  evolve: (rows) => rows,
};
