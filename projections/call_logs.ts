// The call log read model: one entry per authenticated call or delivery, kept 7 days and swept
// away within 24 hours after it expires.
import type { Queryable } from "../src/db/connect.ts";
import type { StoredEvent } from "../events/catalogue.ts";
import type { Projection } from "./projection.ts";

export const LOG_RETENTION_MS = 7 * 24 * 3600 * 1000;

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
}

export const callLogsProjection: Projection<CallLogRow> = {
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
  ],
  keyColumns: ["wallet_id", "id"],
  keyOf: (event) => event.type === "CallBilled" ? `${event.walletId}/${event.data.callId}` : null,
  evolve(_row, event) {
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
      expires_at: new Date(event.recordedAt.getTime() + LOG_RETENTION_MS),
    };
  },
  readsPrevious: false,
  async save(tx, _event, row) {
    if (!row) return;
    await tx`
      insert into call_logs (wallet_id, id, version, method, path, endpoint, status_code, error, cost, balance,
                             response_time_ms, at, expires_at)
      values (${row.wallet_id}, ${row.id}, ${row.version}, ${row.method}, ${row.path}, ${row.endpoint},
              ${row.status_code}, ${row.error}, ${row.cost}, ${row.balance}, ${row.response_time_ms}, ${row.at},
              ${row.expires_at})`;
  },
  liveFilter: "expires_at > now()",
};

export const LOG_ENDPOINTS = ["kv", "token", "webhook", "webhook-delivery", "email", "payment"] as const;
export type LogEndpoint = typeof LOG_ENDPOINTS[number];

/** The newest entries first, live ones only. */
export async function newestCallLogs(
  sql: Queryable,
  walletId: string,
  options: { limit: number; endpoint?: string; now: Date },
): Promise<CallLogRow[]> {
  const { limit, endpoint, now } = options;
  return await sql<CallLogRow[]>`
    select * from call_logs
    where wallet_id = ${walletId} and expires_at > ${now}
      ${endpoint ? sql`and endpoint = ${endpoint}` : sql``}
    order by version desc limit ${limit}`;
}

export async function sweepExpiredCallLogs(sql: Queryable, now: Date): Promise<number> {
  const rows = await sql`delete from call_logs where expires_at <= ${now} returning 1`;
  return rows.length;
}
