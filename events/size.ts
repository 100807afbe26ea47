// The size of the event store on disk (heap, TOAST and indexes), from the catalog: no row is read.
import type { Sql } from "../src/db/connect.ts";

export async function eventsBytes(sql: Sql): Promise<number> {
  const [row] = await sql<{ bytes: number }[]>`
    select coalesce(sum(pg_total_relation_size(relid)), 0)::bigint as bytes from pg_partition_tree('events')`;
  return row.bytes;
}
