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
  /** The key columns of the row an event touches, or null when the event is not about this model. */
  keyRow(event: StoredEvent): Partial<Row> | null;
  /** The id of the row an event touches (rowId of its keyRow), or null: derived by defineProjection. */
  keyOf(event: StoredEvent): string | null;
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

/** What a read model declares: everything but keyOf, which follows from keyColumns and keyRow. */
export type ProjectionSpec<Row> = Omit<Projection<Row>, "keyOf">;

/**
 * A row's identity from its key columns, the one string for the same row wherever it is worked out:
 * the folds' keys (keyOf), the reads' ids and their loaders' maps (and a query read's id from the
 * fields of its key). One column: its value (a wallet id); more: the JSON array of their values,
 * in the order given (undefined as null).
 */
export function rowId(columns: readonly string[], row: object): string {
  const fields = row as Record<string, unknown>;
  if (columns.length === 1) return String(fields[columns[0]]);
  const values = new Array(columns.length);
  for (let i = 0; i < columns.length; i++) values[i] = fields[columns[i]];
  return JSON.stringify(values);
}

/** A read model whose keyOf is the rowId of its keyRow, so the fold and the reads agree on ids. */
export function defineProjection<Row>(spec: ProjectionSpec<Row>): Projection<Row> {
  const { keyColumns, keyRow } = spec;
  return {
    ...spec,
    keyOf(event) {
      const key = keyRow(event);
      return key === null ? null : rowId(keyColumns, key);
    },
  };
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
  /**
   * A key's identity: the same string for the same row, and the projection's keyOf for its events.
   * load's map uses these ids; BatchReads refuses a value loaded under an id no key has.
   */
  id(key: Key): string;
  /** The live values of many keys at once; keys without a row are left out. */
  load(sql: Queryable, keys: Key[], now: Date): Promise<Map<string, Value>>;
  /** The ids an event may change (pure). */
  touches(event: StoredEvent): string[];
  /** The value after the event (pure; undefined: no row). */
  evolve(value: Value | undefined, event: StoredEvent): Value | undefined;
}

/**
 * A read of one projection row, kept current by the projection's own keyOf and evolve. Its ids are
 * the rowIds of the key columns keyRow names, and its loader's rows are mapped by theirs.
 */
export function rowRead<Key, Row>(
  projection: Projection<Row>,
  options: {
    name: string;
    /** The key columns of the row a key names. */
    keyRow(key: Key): Partial<Row>;
    /** The live rows of many keys at once; keys without a row are left out. */
    load(sql: Queryable, keys: Key[], now: Date): Promise<Row[]>;
  },
): ReadKind<Key, Row> {
  const { name, keyRow, load } = options;
  const { keyColumns } = projection;
  return {
    name,
    id: (key) => rowId(keyColumns, keyRow(key) as object),
    async load(sql, keys, now) {
      const rows = await load(sql, keys, now);
      return new Map(rows.map((row) => [rowId(keyColumns, row as object), row]));
    },
    touches(event) {
      const key = projection.keyOf(event);
      return key === null ? [] : [key];
    },
    evolve: (row, event) => projection.evolve(row, event),
  };
}

/**
 * All of a wallet's rows of a model keyed by the wallet and one more column, as a ledger read: a map
 * by that column, kept current by the model's own keyRow and evolve. `load` reads the wallets' rows.
 */
export function walletRowsRead<Row extends { wallet_id: string }>(
  projection: Projection<Row>,
  options: { name: string; load(sql: Queryable, walletIds: string[]): Promise<Row[]> },
): ReadKind<string, Map<string, Row>> {
  const { keyColumns } = projection;
  if (keyColumns.length !== 2) {
    throw new Error(`Table "${projection.table}" is not keyed by wallet and one column`);
  }
  const column = keyColumns[1];
  return {
    name: options.name,
    id: (walletId) => walletId,
    async load(sql, walletIds) {
      const found = new Map(walletIds.map((id) => [id, new Map<string, Row>()]));
      for (const row of await options.load(sql, walletIds)) {
        found.get(row.wallet_id)!.set(String(row[column]), row);
      }
      return found;
    },
    touches: (event) => projection.keyRow(event) === null ? [] : [event.walletId],
    evolve(rows, event) {
      const next = new Map(rows);
      const id = String(projection.keyRow(event)![column]);
      const row = projection.evolve(next.get(id), event);
      if (row) next.set(id, row);
      else next.delete(id);
      return next;
    },
  };
}
