// What the permanent log (`events`) holds and how fast it grows: the table's whole size
// (pg_total_relation_size: heap, TOAST and indexes) and the bytes of the rows added since a mark
// (sum of pg_column_size of each row, as stored: compressed values count compressed).
import type { Sql } from "../../db/connect.ts";
import { sha256Hex } from "../../ids.ts";

export interface EventsMark {
  tableBytes: number;
  /** The highest event position so far; rows added after it are the new ones. */
  position: number;
}

export async function eventsMark(sql: Sql): Promise<EventsMark> {
  const [row] = await sql<{ table_bytes: number; position: number }[]>`
    select pg_total_relation_size('events')::bigint as table_bytes,
           coalesce((select max(position) from events), 0)::bigint as position`;
  return { tableBytes: Number(row.table_bytes), position: Number(row.position) };
}

/** Bytes of the rows added after `mark`, of every wallet or only of the wallets given. */
export async function rowBytesSince(sql: Sql, mark: EventsMark, walletIds?: string[]): Promise<number> {
  const [row] = walletIds
    ? await sql<{ bytes: number }[]>`
      select coalesce(sum(pg_column_size(e.*)), 0)::bigint as bytes from events e
      where position > ${mark.position} and wallet_id = any(${walletIds})`
    : await sql<{ bytes: number }[]>`
      select coalesce(sum(pg_column_size(e.*)), 0)::bigint as bytes from events e
      where position > ${mark.position}`;
  return Number(row.bytes);
}

/** The wallet id of a token: its SHA-256 in lowercase hex (CONTRACT section 3). */
export function walletIdOf(token: string): string {
  return sha256Hex(token);
}
