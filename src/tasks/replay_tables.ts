// The tables replay rebuilds into (schema `replay`): created like the live ones, filled through a
// writer per table, and compared with the live tables in SQL.
import type { Sql } from "../db/connect.ts";
import type { Projection } from "../../projections/projection.ts";
import { batchWriter, copyWriter, REPLAY_BATCH_ROWS, type RowWriter } from "./replay_writers.ts";
import { binaryEncodable } from "./copy_binary.ts";

export const REPLAY_SCHEMA = "replay";
/** Differing rows named per table and side in the report. */
const SAMPLES = 5;

type Row = Record<string, unknown>;

export interface TableDifference {
  table: string;
  rows: number;
  onlyLive: number;
  onlyReplayed: number;
  samples: string[];
}

/**
 * Fresh replay tables shaped like the live ones; unlogged, as they are scratch work. With `copy`,
 * each table is written through its own COPY stream, which holds a connection until the end: the
 * pool needs one per projection plus one for reading the log.
 */
export async function createReplayTables(
  sql: Sql,
  projections: Projection<any>[],
  options: { copy: boolean },
): Promise<ReplayTables> {
  await sql.unsafe(`drop schema if exists ${REPLAY_SCHEMA} cascade`);
  await sql.unsafe(`create schema ${REPLAY_SCHEMA}`);
  const writers: RowWriter[] = [];
  for (const { table, columns } of projections) {
    await sql.unsafe(
      `create unlogged table ${REPLAY_SCHEMA}.${table} (like public.${table} including defaults)`,
    );
    const rows = await sql<{ name: string; type: string }[]>`
      select attname::text as name, format_type(atttypid, atttypmod) as type from pg_attribute
      where attrelid = ${`public.${table}`}::regclass and attnum > 0 and not attisdropped`;
    const typeOf = new Map(rows.map((r) => [r.name, r.type]));
    const shape = { target: `${REPLAY_SCHEMA}.${table}`, columns, types: columns.map((c) => typeOf.get(c)!) };
    writers.push(
      options.copy && binaryEncodable(shape.types) ? copyWriter(sql, shape) : batchWriter(sql, shape),
    );
  }
  return new ReplayTables(sql, projections, writers);
}

export class ReplayTables {
  private buffers: Row[][];
  private writing: Promise<unknown> = Promise.resolve();
  readonly counts: number[];

  constructor(private sql: Sql, private projections: Projection<any>[], private writers: RowWriter[]) {
    this.buffers = projections.map(() => []);
    this.counts = projections.map(() => 0);
  }

  add(index: number, row: Row) {
    this.buffers[index].push(row);
    this.counts[index]++;
  }

  /**
   * Hands every full buffer to its writer. One hand-over is in flight at a time, so folding goes
   * on while the database takes rows, and memory stays within about two batches per table.
   */
  async flushFull() {
    const full = this.buffers.flatMap((rows, index) => rows.length >= REPLAY_BATCH_ROWS ? [index] : []);
    if (full.length === 0) return;
    await this.writing;
    this.writing = Promise.all(full.map((index) => this.writers[index].write(this.take(index))));
    this.writing.catch(() => {});
  }

  async flushAll() {
    await this.writing;
    await Promise.all(this.writers.map((writer, index) => writer.write(this.take(index))));
    await Promise.all(this.writers.map((writer) => writer.close()));
  }

  private take(index: number): Row[] {
    const rows = this.buffers[index];
    this.buffers[index] = [];
    return rows;
  }

  /**
   * Compares each rebuilt table with the live one, live rows only. A digest per wallet (row count
   * and the sum of 64-bit row hashes, a multiset hash) finds the wallets that differ in one pass
   * over each table; only those wallets are then compared row by row both ways with EXCEPT ALL,
   * which gives the exact counts and samples. Everything stays in the database, and the tables
   * are compared at once, each on a connection of the pool (the cores share the work).
   */
  compare(): Promise<TableDifference[]> {
    return Promise.all(this.projections.map((projection, index) => this.compareOne(projection, index)));
  }

  private async compareOne(projection: Projection<any>, index: number): Promise<TableDifference> {
    const { table, columns, keyColumns } = projection;
    const filter = projection.liveFilter ? `where ${projection.liveFilter}` : "";
    const list = columns.map((c) => `"${c}"`).join(", ");
    const digest = (schema: string) =>
      `select wallet_id, count(*) as n, sum(hashtextextended(row(${list})::text, 0)) as h
       from ${schema}.${table} ${filter} group by wallet_id`;
    const suspects = `${REPLAY_SCHEMA}.differing_${table}`;
    await this.sql.unsafe(`
      create unlogged table ${suspects} as
      select coalesce(l.wallet_id, r.wallet_id) as wallet_id
      from (${digest("public")}) l full join (${digest(REPLAY_SCHEMA)}) r on r.wallet_id = l.wallet_id
      where l.n is distinct from r.n or l.h is distinct from r.h`);
    const side = (a: string, b: string) =>
      this.sql.unsafe(`
        select count(*) over () as total, d.* from (
          select ${list} from ${a}.${table} where wallet_id in (select wallet_id from ${suspects})
            ${projection.liveFilter ? `and ${projection.liveFilter}` : ""}
          except all
          select ${list} from ${b}.${table} where wallet_id in (select wallet_id from ${suspects})
            ${projection.liveFilter ? `and ${projection.liveFilter}` : ""}
        ) d limit ${SAMPLES}`);
    const [onlyLive, onlyReplayed] = await Promise.all([
      side("public", REPLAY_SCHEMA),
      side(REPLAY_SCHEMA, "public"),
    ]);
    const keyOf = (r: Row) => keyColumns.map((k) => String(r[k])).join("/");
    return {
      table,
      rows: this.counts[index],
      onlyLive: Number(onlyLive[0]?.total ?? 0),
      onlyReplayed: Number(onlyReplayed[0]?.total ?? 0),
      samples: [
        ...onlyLive.map((r) => `live only: ${keyOf(r)}`),
        ...onlyReplayed.map((r) => `replayed only: ${keyOf(r)}`),
      ],
    };
  }
}
