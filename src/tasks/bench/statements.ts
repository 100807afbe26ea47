// The statements the database spent its time on during a load, from pg_stat_statements (the
// bench's own cluster preloads it when profiling).
import type { Sql } from "../../db/connect.ts";

export interface TopStatement {
  query: string;
  calls: number;
  totalMs: number;
  meanMs: number;
  rows: number;
  /** Share of the total execution time of all statements, in percent. */
  percent: number;
}

/** Longest shown of a statement's text: enough to recognise it. */
const QUERY_CHARS = 160;

export async function resetStatements(sql: Sql) {
  await sql`create extension if not exists pg_stat_statements`;
  await sql`select pg_stat_statements_reset()`;
}

/** The statements of one database by total execution time. */
export async function topStatements(sql: Sql, database: string, top = 10): Promise<TopStatement[]> {
  const rows = await sql<
    { query: string; calls: number; total: number; mean: number; rows: number; share: number }[]
  >`
    select s.query, s.calls, s.total_exec_time as total, s.mean_exec_time as mean, s.rows,
           100 * s.total_exec_time / nullif(sum(s.total_exec_time) over (), 0) as share
    from pg_stat_statements s join pg_database d on d.oid = s.dbid
    where d.datname = ${database}
    order by s.total_exec_time desc limit ${top}`;
  return rows.map((r) => ({
    query: r.query.replace(/\s+/g, " ").slice(0, QUERY_CHARS),
    calls: Number(r.calls),
    totalMs: Math.round(Number(r.total)),
    meanMs: Math.round(Number(r.mean) * 1000) / 1000,
    rows: Number(r.rows),
    percent: Math.round(Number(r.share ?? 0) * 10) / 10,
  }));
}
