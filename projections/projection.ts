// What every read model is: a pure fold of events into rows, keyed per wallet, plus the SQL that
// keeps its table. The ledger runs the fold inline in each command's transaction; replay runs
// the same fold over the log wallet by wallet and writes the rows into fresh tables.
import type { Queryable } from "../src/db/connect.ts";
import type { StoredEvent } from "../events/catalogue.ts";

export interface Projection<Row> {
  /** The table this read model keeps. */
  table: string;
  /** Columns of the table in insert order; the row objects use the same names. */
  columns: readonly (keyof Row & string)[];
  /** Columns identifying a row, the table's primary key. */
  keyColumns: readonly (keyof Row & string)[];
  /** The key of the row an event touches, or null when the event is not about this model. */
  keyOf(event: StoredEvent): string | null;
  /** Pure fold step: the row after the event (undefined: no row). */
  evolve(row: Row | undefined, event: StoredEvent): Row | undefined;
  /** Whether evolve needs the current row (otherwise inline updates skip reading it). */
  readsPrevious: boolean;
  /** Reads the current row for inline updates, when readsPrevious. */
  load?(tx: Queryable, event: StoredEvent): Promise<Row | undefined>;
  /** Writes the row for inline updates (undefined deletes it). */
  save(tx: Queryable, event: StoredEvent, row: Row | undefined): Promise<void>;
  /** Rows that live comparisons should ignore, such as expired entries awaiting the sweep. */
  liveFilter?: string;
  /** Whether a deactivated wallet's rows leave this model (CONTRACT section 3). */
  removedWithWallet?: boolean;
  /**
   * Insert-only models nobody reads inside a command (call logs) may be written once per
   * transaction with saveMany instead of a statement per event.
   */
  saveMany?(tx: Queryable, rows: Row[]): Promise<void>;
}

/** Whether the event takes all of a wallet's rows out of the projection. */
export function removesWalletRows(projection: Projection<unknown>, event: StoredEvent): boolean {
  return event.type === "WalletDeactivated" && projection.removedWithWallet === true;
}

/** Applies one event to a projection inside the caller's transaction. */
export async function applyInline<Row>(tx: Queryable, projection: Projection<Row>, event: StoredEvent) {
  if (removesWalletRows(projection as Projection<unknown>, event)) {
    await tx`delete from ${tx(projection.table)} where wallet_id = ${event.walletId}`;
    return;
  }
  if (projection.keyOf(event) === null) return;
  const previous = projection.readsPrevious && projection.load ? await projection.load(tx, event) : undefined;
  await projection.save(tx, event, projection.evolve(previous, event));
}
