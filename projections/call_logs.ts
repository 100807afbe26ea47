// The call log read model: one entry per authenticated call or delivery, kept 7 days and dropped
// with its whole time partition within 24 hours after it expires.
import type { Queryable, Sql } from "../src/db/connect.ts";
import { expiryPartitioning, maintainPartitions, type PartitionUpkeep } from "../src/db/partitions.ts";
import type { StoredEvent } from "../events/catalogue.ts";
import { defineProjection, type ReadKind, rowId } from "./projection.ts";
import { FREE_VIEW_PATHS } from "./view_calls.ts";

export const LOG_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** When an entry leaves the log: 7 days after the event that made it. */
function expiryOf(event: StoredEvent): Date {
  return new Date(event.recordedAt.getTime() + LOG_RETENTION_MS);
}

/** An entry leaves with its partition within the 24 hours the spec allows after it expired. */
export const CALL_LOG_PARTITIONING = expiryPartitioning("call_logs", LOG_RETENTION_MS);

export interface CallLogRow {
  wallet_id: string;
  id: string;
  version: number;
  method: string;
  path: string;
  endpoint: string;
  status_code: number;
  error: string | null;
  cost: number;
  balance: number;
  response_time_ms: number;
  at: Date;
  expires_at: Date;
  /** The scoped key that made the call; null: the wallet token, a delivery or a payment. */
  key_id: string | null;
}

export const callLogsProjection = defineProjection<CallLogRow>({
  table: "call_logs",
  columns: [
    "wallet_id",
    "id",
    "version",
    "method",
    "path",
    "endpoint",
    "status_code",
    "error",
    "cost",
    "balance",
    "response_time_ms",
    "at",
    "expires_at",
    "key_id",
  ],
  keyColumns: ["wallet_id", "id"],
  keyRow(event) {
    const id = logIdOf(event);
    return id === null ? null : { wallet_id: event.walletId, id };
  },
  evolve(_row, event) {
    if (event.type === "DeliveryAttempted") return deliveryLogRow(event);
    if (event.type === "CreditsPurchased") return paymentLogRow(event);
    if (event.type !== "CallBilled") return undefined;
    const d = event.data;
    return {
      wallet_id: event.walletId,
      id: d.callId,
      version: event.version,
      method: d.method,
      path: d.path,
      endpoint: d.endpoint,
      status_code: d.status,
      error: d.error ?? null,
      cost: d.cost,
      balance: d.balance,
      response_time_ms: d.ms,
      at: event.recordedAt,
      expires_at: expiryOf(event),
      key_id: d.keyId ?? null,
    };
  },
  readsPrevious: false,
  insertOnly: true,
  liveFilter: "expires_at > now()",
});

/** The id of the entry an event makes, or null when it makes none. */
function logIdOf(event: StoredEvent): string | null {
  if (event.type === "CallBilled") return event.data.callId;
  if (event.type === "DeliveryAttempted") return event.data.attemptId;
  if (event.type === "CreditsPurchased") return paymentLogId(event.data.paymentId);
  return null;
}

/** A payment's entry is named by the provider's event id, cut to what the column holds. */
function paymentLogId(paymentId: string): string {
  return paymentId.slice(0, 64);
}

/**
 * A delivery attempt as a log entry: `POST <webhookId>`, the receiver's status (0 when there was no
 * answer), the error, and the cost of the email or run on its first attempt (0 on retries).
 */
function deliveryLogRow(event: Extract<StoredEvent, { type: "DeliveryAttempted" }>): CallLogRow {
  const d = event.data;
  return {
    wallet_id: event.walletId,
    id: d.attemptId,
    version: event.version,
    method: "POST",
    path: d.webhookId,
    endpoint: "webhook-delivery",
    status_code: d.status ?? 0,
    error: d.error ?? null,
    cost: d.cost,
    balance: d.balance,
    response_time_ms: d.latencyMs,
    at: event.recordedAt,
    expires_at: expiryOf(event),
    key_id: null,
  };
}

/** A confirmed payment as a log entry: free, with the balance it left. */
function paymentLogRow(event: Extract<StoredEvent, { type: "CreditsPurchased" }>): CallLogRow {
  return {
    wallet_id: event.walletId,
    id: paymentLogId(event.data.paymentId),
    version: event.version,
    method: "POST",
    path: "/payments/webhook",
    endpoint: "payment",
    status_code: 200,
    error: null,
    cost: 0,
    balance: event.data.balance,
    response_time_ms: 0,
    at: event.recordedAt,
    expires_at: expiryOf(event),
    key_id: null,
  };
}

export const LOG_ENDPOINTS = ["kv", "token", "webhook", "webhook-delivery", "email", "payment"] as const;
export type LogEndpoint = typeof LOG_ENDPOINTS[number];

/**
 * The free views a console calls on its own (issue 27): GET of the ledger, the usage, the schedule
 * preview and the recharge links. Their entries stay in the log (bounded by the free calls' limits)
 * and are left out of the log view unless asked for, so the user's own calls come first.
 */
export const VIEW_LOG_PATHS: readonly string[] = [...FREE_VIEW_PATHS, "/recharge"];

/** The newest entries first, live ones only; the free views' only with `views`. */
export async function newestCallLogs(
  sql: Queryable,
  walletId: string,
  options: { limit: number; endpoint?: string; views?: boolean; now: Date },
): Promise<CallLogRow[]> {
  const { limit, endpoint, now } = options;
  return await sql<CallLogRow[]>`
    select * from call_logs
    where wallet_id = ${walletId} and expires_at > ${now}
      ${endpoint ? sql`and endpoint = ${endpoint}` : sql``}
      ${
    options.views
      ? sql``
      : sql`and not (method = 'GET' and cost = 0 and split_part(path, '?', 1) = any(${VIEW_LOG_PATHS}))`
  }
    order by version desc limit ${limit}`;
}

export interface NewestLogsKey {
  walletId: string;
  limit: number;
  endpoint?: string;
  /** Include the free views' entries. */
  views?: boolean;
}

/**
 * The newest entries as a ledger read: a snapshot taken in the batch's lock round trip. The
 * entries of calls in the same batch are not among them: they are written when the batch ends.
 */
export const newestCallLogsRead: ReadKind<NewestLogsKey, CallLogRow[]> = {
  name: "newest call logs",
  id: (key) => rowId(["walletId", "limit", "endpoint", "views"], key),
  async load(sql, keys, now) {
    const found = await Promise.all(keys.map((key) => newestCallLogs(sql, key.walletId, { ...key, now })));
    return new Map(keys.map((key, i) => [newestCallLogsRead.id(key), found[i]]));
  },
  touches: () => [],
  evolve: (rows) => rows,
};

/** Creates the partitions ahead and drops the expired ones: no row-by-row delete. */
export async function sweepExpiredCallLogs(sql: Sql, now: Date): Promise<PartitionUpkeep> {
  return await maintainPartitions(sql, CALL_LOG_PARTITIONING, now);
}
