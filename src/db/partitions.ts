// Time partitions of tables partitioned by range on an expiry column: created ahead of time, and
// dropped whole once every row in them has expired, so retention never deletes row by row.
import type { Sql, Tx } from "./connect.ts";

export interface TimePartitioning {
  /** The partitioned table; its catch-all partition is `<table>_default`. */
  table: string;
  /** The range column: a row may go once this time is past. */
  column: string;
  /** Width of one partition: a row is dropped at most this long after it expired (plus a sweep). */
  widthMs: number;
  /** Partitions exist from now to at least this far ahead, past the furthest expiry a new row gets. */
  aheadMs: number;
}

const HOUR_MS = 3600 * 1000;

/**
 * Partitions of 12 hours by `expires_at` for rows kept `retentionMs` after they are written: one is
 * dropped at the first sweep after its last row expired, well within the day a spec allows, and they
 * exist a day beyond the furthest expiry a new row gets.
 */
export function expiryPartitioning(table: string, retentionMs: number): TimePartitioning {
  return { table, column: "expires_at", widthMs: 12 * HOUR_MS, aheadMs: retentionMs + 24 * HOUR_MS };
}

export interface PartitionRange {
  name: string;
  from: Date;
  to: Date;
}

export interface PartitionUpkeep {
  created: string[];
  dropped: string[];
  /** Expired rows deleted from the catch-all partition (only rows outside every dated partition). */
  strays: number;
}

/**
 * How long upkeep waits for a table lock before leaving the work to the next sweep. Dropping a
 * partition locks its parent, and writers queue behind a waiting drop: the wait stays short.
 */
export const PARTITION_LOCK_TIMEOUT_MS = 500;
/** Most partitions created in one upkeep: a bound on a wrong clock or a huge aheadMs. */
export const MAX_PARTITIONS_CREATED = 64;
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

function checkIdentifiers(spec: TimePartitioning) {
  for (const name of [spec.table, spec.column]) {
    if (!IDENTIFIER.test(name)) throw new Error(`Invalid identifier "${name}": must match ${IDENTIFIER}`);
  }
}

/** `call_logs_p20260101t1200`: the partition starting at that UTC time. */
export function partitionName(table: string, from: Date): string {
  const iso = from.toISOString();
  return `${table}_p${iso.slice(0, 10).replaceAll("-", "")}t${iso.slice(11, 13)}${iso.slice(14, 16)}`;
}

/** The aligned ranges that should exist at `now`: from the one holding now to now + aheadMs. */
export function wantedRanges(spec: TimePartitioning, now: Date): PartitionRange[] {
  const first = Math.floor(now.getTime() / spec.widthMs) * spec.widthMs;
  const end = now.getTime() + spec.aheadMs;
  const ranges: PartitionRange[] = [];
  for (let from = first; from < end && ranges.length < MAX_PARTITIONS_CREATED; from += spec.widthMs) {
    ranges.push({
      name: partitionName(spec.table, new Date(from)),
      from: new Date(from),
      to: new Date(from + spec.widthMs),
    });
  }
  return ranges;
}

interface ExistingPartition {
  name: string;
  /** Null for the default partition. */
  from: Date | null;
  /** Null for the default partition and for an open upper bound (MAXVALUE): never dropped. */
  to: Date | null;
}

/** The partitions a table has now, with their bounds read from the catalogue. */
export async function listPartitions(sql: Sql | Tx, table: string): Promise<ExistingPartition[]> {
  return await sql<ExistingPartition[]>`
    select name,
           substring(bound from 'FROM \\(''([^'']+)''\\)')::timestamptz as "from",
           substring(bound from 'TO \\(''([^'']+)''\\)')::timestamptz as "to"
    from (select c.relname::text as name, pg_get_expr(c.relpartbound, c.oid) as bound
          from pg_inherits i join pg_class c on c.oid = i.inhrelid
          where i.inhparent = ${table}::regclass) p
    order by "from" nulls first`;
}

function overlaps(range: PartitionRange, existing: ExistingPartition[]): boolean {
  return existing.some((p) => p.from !== null && p.from < range.to && (p.to === null || p.to > range.from));
}

/**
 * Creates the missing partitions up to now + aheadMs. Rows that reached the catch-all partition
 * for a range (written before its partition existed) move into the new partition, which is then
 * attached: attaching locks the parent only lightly, where CREATE ... PARTITION OF would block writers.
 */
export async function createPartitions(sql: Sql, spec: TimePartitioning, now: Date): Promise<string[]> {
  checkIdentifiers(spec);
  const { table, column } = spec;
  return await sql.begin(async (tx) => {
    await lockUpkeep(tx, table);
    const existing = await listPartitions(tx, table);
    const missing = wantedRanges(spec, now).filter((range) => !overlaps(range, existing));
    for (const { name, from, to } of missing) {
      await tx.unsafe(`create table ${name} (like ${table} including defaults including constraints)`);
      await tx.unsafe(
        `with moved as (delete from ${table}_default where ${column} >= $1 and ${column} < $2 returning *)
         insert into ${name} select * from moved`,
        [from, to],
      );
      await tx.unsafe(
        `alter table ${table} attach partition ${name} for values from (${literal(from)}) to (${
          literal(to)
        })`,
      );
    }
    return missing.map((range) => range.name);
  });
}

/** Drops every dated partition whose upper bound is past: all its rows have expired. */
export async function dropExpiredPartitions(sql: Sql, spec: TimePartitioning, now: Date): Promise<string[]> {
  checkIdentifiers(spec);
  const expired = (await listPartitions(sql, spec.table)).filter((p) => p.to !== null && p.to <= now);
  const dropped: string[] = [];
  // One transaction each: dropping a partition locks the parent briefly, so no lock is held longer.
  for (const { name } of expired) {
    await sql.begin(async (tx) => {
      await lockUpkeep(tx, spec.table);
      await tx.unsafe(`drop table if exists ${name}`);
    });
    dropped.push(name);
  }
  return dropped;
}

/** Deletes the expired rows that ended up in the catch-all partition; normally there are none. */
export async function sweepDefaultPartition(sql: Sql, spec: TimePartitioning, now: Date): Promise<number> {
  checkIdentifiers(spec);
  const rows = await sql.unsafe(
    `delete from ${spec.table}_default where ${spec.column} <= $1 returning 1`,
    [now],
  );
  return rows.length;
}

/**
 * The whole upkeep of one table: create ahead, drop the expired, clear expired strays. Each step
 * runs even if another failed (a lock not granted in time); failures are thrown after all ran.
 */
export async function maintainPartitions(
  sql: Sql,
  spec: TimePartitioning,
  now: Date,
): Promise<PartitionUpkeep> {
  const failures: string[] = [];
  const attempt = async <T>(step: string, work: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      failures.push(`${step}: ${error instanceof Error ? error.message : error}`);
      return fallback;
    }
  };
  const created = await attempt("create", () => createPartitions(sql, spec, now), []);
  const dropped = await attempt("drop", () => dropExpiredPartitions(sql, spec, now), []);
  const strays = await attempt("strays", () => sweepDefaultPartition(sql, spec, now), 0);
  if (failures.length) throw new Error(`Partition upkeep of ${spec.table} failed: ${failures.join("; ")}`);
  return { created, dropped, strays };
}

/** One upkeep per table at a time across instances, and no long wait for a table lock. */
async function lockUpkeep(tx: Tx, table: string) {
  await tx.unsafe(`set local lock_timeout = ${PARTITION_LOCK_TIMEOUT_MS}`);
  await tx`select pg_advisory_xact_lock(hashtext(${`partitions:${table}`}))`;
}

/** A timestamptz literal: partition bounds cannot be query parameters. */
function literal(at: Date): string {
  return `'${at.toISOString()}'`;
}
