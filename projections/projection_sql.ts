// Set-based SQL for any read model, built once per table from its columns and the catalog's types:
// a batch's rows travel as one jsonb parameter, so a ledger transaction writes each model in one
// statement whatever the number of calls. Rows are loaded one key at a time through the primary
// key (a lateral join), never by a plan that guesses the size of the list.
import type { Queryable } from "../src/db/connect.ts";
import type { Projection } from "./projection.ts";

type Row = Record<string, unknown>;

export interface Statements {
  insert: string;
  upsert: string;
  deleteKeys: string;
  loadKeys: string;
  deleteWallets: string;
}

const cache = new Map<string, Promise<Statements>>();

async function columnTypes(sql: Queryable, table: string): Promise<Map<string, string>> {
  const rows = await sql<{ name: string; type: string }[]>`
    select attname::text as name, format_type(atttypid, atttypmod) as type from pg_attribute
    where attrelid = ${table}::regclass and attnum > 0 and not attisdropped`;
  return new Map(rows.map((r) => [r.name, r.type]));
}

function build(projection: Projection<any>, types: Map<string, string>): Statements {
  const { table, columns, keyColumns } = projection;
  if (keyColumns[0] !== "wallet_id") {
    throw new Error(`Table "${table}" has a key that does not lead with wallet_id`);
  }
  const typed = (cols: readonly string[]) =>
    cols.map((c) => {
      const type = types.get(c);
      if (!type) throw new Error(`Table "${table}" has no column "${c}"`);
      return `"${c}" ${type}`;
    }).join(", ");
  const list = columns.map((c) => `"${c}"`).join(", ");
  const conflict = projection.conflictColumns ?? keyColumns;
  const keyList = conflict.map((c) => `"${c}"`).join(", ");
  const added = (projection.additive ?? []) as readonly string[];
  const updates = columns.filter((c) => !conflict.includes(c)).map((c) =>
    added.includes(c) ? `"${c}" = ${table}."${c}" + excluded."${c}"` : `"${c}" = excluded."${c}"`
  );
  // A join with jsonb_to_recordset (estimated at 100 rows) is planned as a hash join over a scan of
  // the whole table once the table is a few thousand rows; naming the wallets as an array first makes
  // it an index scan of theirs (every key leads with wallet_id). For DELETE ... USING.
  const ofWallets =
    `e.wallet_id = any(array(select w.wallet_id from jsonb_to_recordset($1) as w(wallet_id text)))`;
  const matches = keyColumns.map((c) => `e."${c}" = x."${c}"`).join(" and ");
  const insert = `insert into ${table} (${list}) select ${list} from jsonb_to_recordset($1) as x(${
    typed(columns)
  })`;
  return {
    insert,
    upsert: `${insert} on conflict (${keyList}) do ${
      updates.length ? `update set ${updates.join(", ")}` : "nothing"
    }`,
    deleteKeys: `delete from ${table} e using jsonb_to_recordset($1) as x(${
      typed(keyColumns)
    }) where ${matches} and ${ofWallets}`,
    loadKeys: `select e.* from jsonb_to_recordset($1) as x(${typed(keyColumns)})
      cross join lateral (select * from ${table} e where ${matches}) e`,
    deleteWallets: `delete from ${table} where wallet_id = any($1::text[])`,
  };
}

/** A model's statements, built once per process from its table's columns (exported for plan tests). */
export function statements(sql: Queryable, projection: Projection<any>): Promise<Statements> {
  let found = cache.get(projection.table);
  if (!found) {
    found = columnTypes(sql, projection.table).then((types) => build(projection, types));
    found.catch(() => cache.delete(projection.table));
    cache.set(projection.table, found);
  }
  return found;
}

async function run(sql: Queryable, text: string, value: unknown): Promise<Row[]> {
  return await sql.unsafe(text, [value as never], { prepare: true }) as unknown as Row[];
}

/** The rows a model has for the given keys (rows carrying at least the key columns). */
export async function loadRows(sql: Queryable, projection: Projection<any>, keys: object[]): Promise<Row[]> {
  if (keys.length === 0) return [];
  return await run(sql, (await statements(sql, projection)).loadKeys, sql.json(keys as never));
}

export interface RowChanges {
  /** Wallets whose rows all leave first (a deactivated wallet). */
  removedWallets: string[];
  /** Rows that no longer exist, by their key columns. */
  deleted: object[];
  /** Rows as they now are: inserted, or updated in place. */
  written: object[];
}

/** Applies a batch's changes to a model's table: wallet removals, then deletes, then writes. */
export async function writeRows(sql: Queryable, projection: Projection<any>, changes: RowChanges) {
  const { removedWallets, deleted, written } = changes;
  if (removedWallets.length + deleted.length + written.length === 0) return;
  const s = await statements(sql, projection);
  const work: Promise<unknown>[] = [];
  if (removedWallets.length) work.push(run(sql, s.deleteWallets, removedWallets));
  if (deleted.length) work.push(run(sql, s.deleteKeys, sql.json(deleted as never)));
  if (written.length) {
    work.push(run(sql, projection.insertOnly ? s.insert : s.upsert, sql.json(written as never)));
  }
  // Sent together, executed in order.
  await Promise.all(work);
}
