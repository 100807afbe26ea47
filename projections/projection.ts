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
  /** The unique index an upsert meets, when it is not keyColumns (a partitioned table adds its bound). */
  conflictColumns?: readonly (keyof Row & string)[];
  /** The key of the row an event touches, or null when the event is not about this model. */
  keyOf(event: StoredEvent): string | null;
  /** The key columns of the row an event touches (when keyOf is not null). */
  keyRow(event: StoredEvent): Partial<Row>;
  /** Pure fold step: the row after the event (undefined: no row). */
  evolve(row: Row | undefined, event: StoredEvent): Row | undefined;
  /** Whether evolve needs the current row (the ledger then loads the rows a batch touches). */
  readsPrevious: boolean;
  /** Rows that live comparisons should ignore, such as expired entries awaiting the sweep. */
  liveFilter?: string;
  /** Whether a deactivated wallet's rows leave this model (CONTRACT section 3). */
  removedWithWallet?: boolean;
  /** Whether an erased wallet's rows stay in this model (money only); every other model drops them. */
  keptWhenErased?: boolean;
  /** One row per event, never updated nor read back by a command (call logs). */
  insertOnly?: boolean;
  /**
   * Counters (usage): a batch folds its events from no row, and the table adds the batch's
   * values of these columns to the ones it holds. evolve(row, event) must add the same way.
   */
  additive?: readonly (keyof Row & string)[];
}

/** Whether the event takes all of a wallet's rows out of the projection. */
export function removesWalletRows(projection: Projection<unknown>, event: StoredEvent): boolean {
  if (event.type === "WalletErased") return projection.keptWhenErased !== true;
  return event.type === "WalletDeactivated" && projection.removedWithWallet === true;
}

/**
 * Rows a command may declare it reads: loaded for a whole ledger batch in one statement, in the
 * round trip that locks the wallets, and kept current with the batch's own events by the
 * projection's fold, so a command sees what the commands before it in the batch did.
 */
export interface ReadKind<Key, Value> {
  /** Names the kind in errors and groups the keys of one batch. */
  name: string;
  /** A key's identity: the same string for the same row, and the projection's keyOf for its events. */
  id(key: Key): string;
  /** The live values of many keys at once; keys without a row are left out. */
  load(sql: Queryable, keys: Key[], now: Date): Promise<Map<string, Value>>;
  /** The ids an event may change (pure). */
  touches(event: StoredEvent): string[];
  /** The value after the event (pure; undefined: no row). */
  evolve(value: Value | undefined, event: StoredEvent): Value | undefined;
}

/** A read of one projection row, kept current by the projection's own keyOf and evolve. */
export function rowRead<Key, Row>(
  projection: Projection<Row>,
  options: { name: string; id(key: Key): string; load: ReadKind<Key, Row>["load"] },
): ReadKind<Key, Row> {
  return {
    ...options,
    touches(event) {
      const key = projection.keyOf(event);
      return key === null ? [] : [key];
    },
    evolve: (row, event) => projection.evolve(row, event),
  };
}
