// The event store: appends a wallet's new events after its current stream version and reads the
// log back in order. The table refuses UPDATE and DELETE by itself (migration 001).
import type { Queryable, Sql } from "../src/db/connect.ts";
import { type NewEvent, parseEvent, type StoredEvent } from "./catalogue.ts";

/**
 * Appends events as versions `afterVersion + 1 ...` of the wallet's stream. The primary key
 * (wallet_id, version) makes a lost update impossible: two writers of one version collide.
 */
export async function appendEvents(
  tx: Queryable,
  walletId: string,
  afterVersion: number,
  events: NewEvent[],
  recordedAt: Date,
): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  const checked = events.map(parseEvent);
  const versions = checked.map((_, i) => afterVersion + 1 + i);
  // One JSON parameter carries the batch; postgres.js serializes it once as jsonb.
  const batch = checked.map((e, i) => ({ v: versions[i], t: e.type, d: e.data }));
  const rows = await tx`
    insert into events (wallet_id, version, type, data, recorded_at)
    select ${walletId}, x.v, x.t, x.d, ${recordedAt}
    from jsonb_to_recordset(${tx.json(batch as any)}) as x(v int, t text, d jsonb)
    returning version, position`;
  if (rows.length !== checked.length) throw new Error(`Appended ${rows.length} of ${checked.length} events`);
  const positions = new Map(rows.map((r) => [r.version as number, r.position as number]));
  return checked.map((e, i) => ({
    ...e,
    walletId,
    version: versions[i],
    position: positions.get(versions[i])!,
    recordedAt,
  }));
}

interface EventRow {
  wallet_id: string;
  version: number;
  position: number;
  type: string;
  data: unknown;
  recorded_at: Date;
}

function toStored(row: EventRow): StoredEvent {
  return {
    walletId: row.wallet_id,
    version: row.version,
    position: row.position,
    type: row.type,
    data: row.data,
    recordedAt: row.recorded_at,
  } as StoredEvent;
}

/** Reads the whole log in position order, in pages, without holding it all in memory. */
export async function* readAllEvents(sql: Sql, pageSize = 5000): AsyncGenerator<StoredEvent[]> {
  let after = 0;
  while (true) {
    const rows = await sql<EventRow[]>`
      select wallet_id, version, position, type, data, recorded_at
      from events where position > ${after} order by position limit ${pageSize}`;
    if (rows.length === 0) return;
    yield rows.map(toStored);
    after = rows[rows.length - 1].position;
  }
}

/** One wallet's stream, oldest first. */
export async function readWalletEvents(sql: Queryable, walletId: string): Promise<StoredEvent[]> {
  const rows = await sql<EventRow[]>`
    select wallet_id, version, position, type, data, recorded_at
    from events where wallet_id = ${walletId} order by version`;
  return rows.map(toStored);
}
