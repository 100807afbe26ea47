// How replay writes rebuilt rows into its tables: a long-lived binary COPY stream per table on
// PostgreSQL (the fastest way in), or one jsonb statement per batch where COPY is not available
// (the embedded PGlite).
import type { Sql } from "../db/connect.ts";
import { CopyBinaryEncoder } from "./copy_binary.ts";

type Row = Record<string, unknown>;

/** Rows per statement or per write to a stream: bounds the memory a batch holds. */
export const REPLAY_BATCH_ROWS = 5000;

export interface TableShape {
  /** Schema-qualified table name. */
  target: string;
  columns: readonly string[];
  /** SQL type of each column, as format_type names it. */
  types: readonly string[];
}

export interface RowWriter {
  /** Writes rows; returns once the database has taken them or buffered them with backpressure. */
  write(rows: Row[]): Promise<void>;
  /** Ends the writer once every row is in. */
  close(): Promise<void>;
}

/** One insert statement per batch, the rows passed as one jsonb parameter. */
export function batchWriter(sql: Sql, shape: TableShape): RowWriter {
  const list = shape.columns.map((c) => `"${c}"`).join(", ");
  const record = shape.columns.map((c, i) => `"${c}" ${shape.types[i]}`).join(", ");
  const insert =
    `insert into ${shape.target} (${list}) select ${list} from jsonb_to_recordset($1) as x(${record})`;
  return {
    async write(rows) {
      for (let at = 0; at < rows.length; at += REPLAY_BATCH_ROWS) {
        const batch = rows.slice(at, at + REPLAY_BATCH_ROWS);
        await sql.unsafe(insert, [sql.json(batch as any) as any]);
      }
    },
    async close() {},
  };
}

/**
 * A binary COPY FROM STDIN stream opened at the first write and kept until close: one statement
 * for the whole table, where a statement per batch pays a round trip and a protocol stall each
 * time. It holds a connection from the pool until closed.
 */
export function copyWriter(sql: Sql, shape: TableShape): RowWriter {
  const encoder = new CopyBinaryEncoder(shape.types);
  let stream: any;
  let failure: unknown;
  let finished: Promise<void> | undefined;

  async function open() {
    const list = shape.columns.map((c) => `"${c}"`).join(", ");
    stream = await sql.unsafe(`copy ${shape.target} (${list}) from stdin with (format binary)`).writable();
    finished = new Promise<void>((resolve, reject) => {
      stream.on("finish", resolve);
      stream.on("error", (error: unknown) => {
        failure = error;
        reject(error);
      });
    });
    finished.catch(() => {});
  }

  async function send(bytes: Uint8Array) {
    if (failure) throw failure;
    if (stream.write(bytes)) return;
    await new Promise<void>((resolve) => {
      stream.once("drain", resolve);
      finished!.catch(() => resolve());
    });
    if (failure) throw failure;
  }

  return {
    async write(rows) {
      if (rows.length === 0) return;
      if (!stream) await open();
      const values = new Array(shape.columns.length);
      for (const row of rows) {
        for (let i = 0; i < shape.columns.length; i++) values[i] = row[shape.columns[i]];
        encoder.row(values);
      }
      await send(encoder.take());
    },
    async close() {
      if (!stream) return;
      encoder.end();
      await send(encoder.take());
      stream.end();
      await finished;
    },
  };
}
