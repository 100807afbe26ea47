// The offline measures: audit and replay speed and peak memory over a seeded ledger, and the
// retention sweep's cost as the call-log table grows.
import { generateMasterKeyText } from "../../secrets/master_key.ts";
import type { Sql } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import { CALL_LOG_PARTITIONING, sweepExpiredCallLogs } from "../../../projections/call_logs.ts";
import { createPartitions } from "../../db/partitions.ts";
import { seedCallLogs } from "./ledger_seed.ts";
import { peakRssMb } from "./system.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

export interface TaskRun {
  task: string;
  seconds: number;
  /** Events per second over the whole task. */
  eventsPerSecond: number;
  /** The task process's peak resident memory (VmHWM), in MB. */
  peakRssMb: number;
  clean: boolean;
  firstLine: string;
}

/** The task's command line from deno.json, run directly so that its pid is the task itself. */
export async function taskCommand(task: string): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  const line: string | undefined = config.tasks?.[task];
  if (!line?.startsWith("deno run ")) throw new Error(`Task "${task}" in deno.json is not a "deno run" line`);
  return line.split(/\s+/).slice(1);
}

/** The seeded database's master key: replay refuses Postgres without one. */
const OFFLINE_MASTER_KEY = generateMasterKeyText();

/** How often the task's peak memory is read while it runs. */
const RSS_SAMPLE_MS = 50;

/**
 * Runs a task on a database and measures it from outside: wall time, and the process's own
 * high-water mark of resident memory (VmHWM), read until it exits.
 */
export async function timeTask(
  task: "audit" | "replay",
  databaseUrl: string,
  events: number,
): Promise<TaskRun> {
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: await taskCommand(task),
    cwd: ROOT,
    // Replay opens the master key at start (the seeded log is in clear: no data key is used).
    env: { DATABASE_URL: databaseUrl, MASTER_KEY: OFFLINE_MASTER_KEY },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let peak = 0;
  const sampler = setInterval(() => peak = Math.max(peak, peakRssMb(child.pid)), RSS_SAMPLE_MS);
  const out = await child.output();
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  const output = new TextDecoder().decode(out.stdout).trim();
  const firstLine = output.split("\n")[0] ?? "";
  if (!firstLine.startsWith(`${task}:`)) {
    throw new Error(
      `Task ${task} failed (exit ${out.code}):\n${output}\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return {
    task,
    seconds,
    eventsPerSecond: Math.round(events / seconds),
    peakRssMb: peak,
    clean: out.code === 0,
    firstLine,
  };
}

export interface SweepPoint {
  rows: number;
  seconds: number;
  droppedPartitions: number;
  droppedRows: number;
  /** For comparison: deleting the next 12 hours of expired rows one by one, as the sweep used to. */
  rowDeleteSeconds: number;
  rowDeleteRows: number;
}

/** The call logs' partition width: each sweep point expires one partition whole. */
const PARTITION_MS = CALL_LOG_PARTITIONING.widthMs;

/**
 * The call-log sweep at two table sizes: rows are seeded with expiries filling the retention
 * window, and the sweep runs when one 12-hour partition has expired whole; then the table grows
 * to the larger size, with expiries 12 hours later, and the next partition expires. Dropping a
 * partition does not read its rows, so both sweeps should cost the same. Each point also times
 * the old way, a DELETE of the next 12 hours of rows, which grows with the table.
 */
export async function measureSweep(sql: Sql, sizes: [number, number]): Promise<SweepPoint[]> {
  await migrate(sql);
  const start = new Date(Math.floor(Date.now() / PARTITION_MS) * PARTITION_MS);
  const points: SweepPoint[] = [];
  let seeded = 0;
  for (const [i, size] of sizes.entries()) {
    const from = new Date(start.getTime() + i * PARTITION_MS);
    await createPartitions(sql, CALL_LOG_PARTITIONING, from);
    await seedCallLogs(sql, { rows: size - seeded, from, offset: seeded });
    seeded = size;
    await sql`analyze call_logs`;
    const now = new Date(from.getTime() + PARTITION_MS + 60_000);
    const [{ expiring }] =
      await sql`select count(*)::bigint as expiring from call_logs where expires_at <= ${now}`;
    const started = performance.now();
    const upkeep = await sweepExpiredCallLogs(sql, now);
    const seconds = (performance.now() - started) / 1000;
    const deleteStarted = performance.now();
    const later = new Date(now.getTime() + PARTITION_MS);
    const [{ deleted }] = await sql`
      with gone as (delete from call_logs where expires_at <= ${later} returning 1) select count(*) as deleted from gone`;
    points.push({
      rows: size,
      seconds,
      droppedPartitions: upkeep.dropped.length,
      droppedRows: Number(expiring),
      rowDeleteSeconds: (performance.now() - deleteStarted) / 1000,
      rowDeleteRows: Number(deleted),
    });
  }
  return points;
}
