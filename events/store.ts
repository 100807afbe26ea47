// The event store: appends events after each wallet's current stream version and reads the log
// back in order. The table refuses UPDATE and DELETE by itself (migration 001).
import type { Queryable, Sql } from "../src/db/connect.ts";
import { type NewEvent, parseEvent, type StoredEvent } from "./catalogue.ts";

/**
 * Numbers a wallet's new events as versions `afterVersion + 1 ...`, checked against their schemas.
 * They get their global position when appended.
 */
export function stageEvents(
  walletId: string,
  { afterVersion, events, recordedAt, validate = true }: {
    afterVersion: number;
    events: NewEvent[];
    recordedAt: Date;
    /** Check each event against its schema (default true). */
    validate?: boolean;
  },
): StoredEvent[] {
  return events.map((event, i) => ({
    ...(validate ? parseEvent(event) : event),
    walletId,
    version: afterVersion + 1 + i,
    position: 0,
    recordedAt,
  }));
}

/**
 * Appends staged events of any number of wallets in one statement and fills in their positions.
 * The primary key (wallet_id, version) makes a lost update impossible: two writers of one
 * version collide.
 */
export async function appendStaged(tx: Queryable, events: StoredEvent[], stored?: unknown[]): Promise<void> {
  if (events.length === 0) return;
  // One jsonb parameter carries the batch; postgres.js serializes it once. `stored`: the data as
  // sealed (sensitive fields encrypted), in the events' order.
  const batch = events.map((e, i) => ({
    w: e.walletId,
    v: e.version,
    t: e.type,
    d: stored ? stored[i] : e.data,
    r: e.recordedAt,
  }));
  const rows = await tx<{ wallet_id: string; version: number; position: number }[]>`
    insert into events (wallet_id, version, type, data, recorded_at)
    select x.w, x.v, x.t, x.d, x.r
    from jsonb_to_recordset(${tx.json(batch as any)}) as x(w text, v int, t text, d jsonb, r timestamptz)
    returning wallet_id, version, position`;
  if (rows.length !== events.length) throw new Error(`Appended ${rows.length} of ${events.length} events`);
  const positions = new Map(rows.map((r) => [`${r.wallet_id}/${r.version}`, r.position]));
  for (const event of events) event.position = positions.get(`${event.walletId}/${event.version}`)!;
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

/**
 * Reads the whole log wallet by wallet, each wallet's stream in version order, in pages taken
 * along the primary key. The next page is asked for while the caller works on this one. Times
 * come as epoch milliseconds, which cost far less to turn into dates than timestamp text.
 */
export async function* readEventsByWallet(sql: Sql, pageSize = 2_000): AsyncGenerator<StoredEvent[]> {
  type PageRow = Omit<EventRow, "recorded_at"> & { recorded_ms: number };
  const page = (after?: PageRow) =>
    sql<PageRow[]>`
      select wallet_id, version, position, type, data,
             floor(extract(epoch from recorded_at) * 1000)::float8 as recorded_ms
      from events
      ${after ? sql`where (wallet_id, version) > (${after.wallet_id}, ${after.version})` : sql``}
      order by wallet_id, version limit ${pageSize}`;
  let next: Promise<PageRow[]> = page();
  while (true) {
    const rows = await next;
    if (rows.length === 0) return;
    next = rows.length < pageSize ? Promise.resolve([]) : page(rows[rows.length - 1]);
    // A failure of the page in flight surfaces when it is awaited, not as an unhandled rejection.
    next.catch(() => {});
    yield rows.map((row) =>
      ({
        walletId: row.wallet_id,
        version: row.version,
        position: row.position,
        type: row.type,
        data: row.data,
        recordedAt: new Date(row.recorded_ms),
      }) as StoredEvent
    );
  }
}

/** One wallet's stream, oldest first. */
export async function readWalletEvents(sql: Queryable, walletId: string): Promise<StoredEvent[]> {
  const rows = await sql<EventRow[]>`
    select wallet_id, version, position, type, data, recorded_at
    from events where wallet_id = ${walletId} order by version`;
  return rows.map(toStored);
}
