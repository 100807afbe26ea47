// A source's WAL archive as the drill watches it: a segment switched and waited for in the
// repository (the archive's lag, which with archive_timeout bounds the recovery point objective).
import type { Sql } from "../../db/connect.ts";
import { sleep } from "../bench/system.ts";
import { round2 } from "./report.ts";

const ARCHIVE_WAIT_MS = 60_000;

/** Switches to a new WAL segment and waits until the archiver reports it archived; seconds. */
export async function archiveCurrentSegment(sql: Sql): Promise<number> {
  const started = performance.now();
  const [{ segment }] = await sql`select pg_walfile_name(pg_switch_wal()) as segment`;
  while (performance.now() - started < ARCHIVE_WAIT_MS) {
    const [{ archived }] =
      await sql`select coalesce(last_archived_wal, '') as archived from pg_stat_archiver`;
    if (archived >= segment) return round2((performance.now() - started) / 1000);
    await sleep(50);
  }
  throw new Error(`WAL segment ${segment} was not archived within ${ARCHIVE_WAIT_MS / 1000} s`);
}

export async function databaseMb(sql: Sql): Promise<number> {
  const [{ bytes }] = await sql`select pg_database_size(current_database())::bigint as bytes`;
  return Math.round(Number(bytes) / 1024 / 1024);
}
