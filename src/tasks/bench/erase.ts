// The erasure's cost (issue 23, BENCH_ONLY part erase): `deno task erase` of one wallet with
// 100,000 events among other wallets, run as the operator runs it (the task's deno.json line, a
// process of its own) and timed from outside, then checked: the wallet's read-model rows are gone,
// its events all stay, the other wallets keep theirs, and the audit is clean.
import type { Sql } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import { preparePartitions } from "../../sweeper.ts";
import { sha256Hex } from "../../ids.ts";
import type { BenchCluster } from "./cluster.ts";
import { seedLedger } from "./ledger_seed.ts";
import { taskCommand, timeTask } from "./offline.ts";

/** Issue 23's target for the erasure of a wallet with 100,000 events. */
export const ERASE_TARGET_SECONDS = 5;
const GRANT = 1_000_000;
/** A quarter of the erased wallet's calls write a key of their own; the rest read them. */
const WRITE_SHARE = 0.25;
/** The other wallets' events: the erasure must find its rows among theirs. */
const OTHER_EVENTS = 200_000;
/** Read-model tables that hold the erased wallet's rows before the erasure and none after. */
const WALLET_ROWS = ["kv_entries", "call_logs", "daily_usage"] as const;

export interface EraseRun {
  events: number;
  kvEntries: number;
  callLogs: number;
  /** Wall time of the task's process, start to exit, as the operator waits for it. */
  seconds: number;
  /** The task's own figure: the erasure through the ledger, without the process's start. */
  taskSeconds: number;
  /** The erased wallet's rows left in WALLET_ROWS (0), and its events (all kept). */
  rowsLeft: number;
  eventsKept: number;
  otherRowsKept: boolean;
  auditClean: boolean;
}

/**
 * One wallet's history of `events` events as the service writes them, in SQL: opened, granted,
 * then KV writes (KvWritten and its CallBilled) to keys of their own and billed reads of them,
 * spread over the last 6 days, with the wallet, KV, call-log, usage and data-key rows they fold
 * into. The call-log rows are in their dated partitions, shuffled among the other wallets' rows.
 */
export async function seedWalletHistory(sql: Sql, walletId: string, events: number): Promise<void> {
  const writes = Math.floor((events - 2) * WRITE_SHARE);
  const lastWrite = 2 + 2 * writes;
  const finalBalance = GRANT - writes - (events - lastWrite);
  const [{ now }] = await sql`select date_trunc('milliseconds', now()) as now`;
  await preparePartitions(sql, now);
  await sql.unsafe(
    `insert into events (wallet_id, version, type, data, recorded_at)
     select $1, v,
       case when v = 1 then 'WalletOpened' when v = 2 then 'CreditsGranted'
            when v <= $3::int and v % 2 = 1 then 'KvWritten' else 'CallBilled' end,
       case when v = 1 then '{}'::jsonb
            when v = 2 then jsonb_build_object('amount', ${GRANT}, 'balance', ${GRANT}, 'reason', 'welcome')
            when v <= $3::int and v % 2 = 1 then jsonb_build_object('bucket', 'b', 'key', 'k' || (v - 3) / 2,
              'value', repeat('v', 100), 'expiresAt', to_json($4::timestamptz + interval '30 days'))
            when v <= $3::int then jsonb_build_object('callId', 'c' || v, 'method', 'POST',
              'path', '/kv/b/k' || (v - 4) / 2, 'endpoint', 'kv', 'status', 200, 'cost', 1,
              'balance', ${GRANT} - (v - 2) / 2, 'ms', 1)
            else jsonb_build_object('callId', 'c' || v, 'method', 'GET',
              'path', '/kv/b/k' || v % $5::int, 'endpoint', 'kv', 'status', 200, 'cost', 1,
              'balance', ${GRANT} - $5::int - (v - $3::int), 'ms', 1) end,
       $4::timestamptz - ($2::int - v) * interval '5 seconds'
     from generate_series(1, $2::int) v`,
    [walletId, events, lastWrite, now, writes],
  );
  await sql.unsafe(
    `insert into wallets (wallet_id, balance, version, created_at, last_used_at, deactivated_at)
     values ($1, $2, $3::int, $4::timestamptz - $3::int * interval '5 seconds', $4, null)`,
    [walletId, finalBalance, events, now],
  );
  await sql.unsafe(
    `insert into kv_entries (wallet_id, bucket, key, value, expires_at, version)
     select wallet_id, data->>'bucket', data->>'key', data->>'value', (data->>'expiresAt')::timestamptz, version
     from events where wallet_id = $1 and type = 'KvWritten'`,
    [walletId],
  );
  // A running service's call-log rows of one wallet lie among every other wallet's, written as
  // their calls came: the table is rewritten with this wallet's rows and the others' shuffled.
  await sql.unsafe(
    `with others as (delete from call_logs returning *)
     insert into call_logs
     select * from (
       select * from others
       union all
       select wallet_id, data->>'callId', version, data->>'method', data->>'path', 'kv', 200, null, 1,
              (data->>'balance')::bigint, 1, recorded_at, recorded_at + interval '7 days', null
       from events where wallet_id = $1 and type = 'CallBilled') rows
     order by random()`,
    [walletId],
  );
  await sql.unsafe(
    `insert into daily_usage
     select wallet_id, (recorded_at at time zone 'UTC')::date, 'kv', count(*), count(*), 0
     from events where wallet_id = $1 and type = 'CallBilled' group by 1, 2`,
    [walletId],
  );
  // The key row as the ledger makes it; the erasure never opens it, so no master key is needed.
  await sql`insert into wallet_keys (wallet_id, wrapped_key, master_key_id)
    values (${walletId}, ${btoa("a wrapped data key of 60 bytes, as the ledger makes them....")}, 'bench')`;
  await sql`analyze`;
}

async function rowsOf(sql: Sql, walletId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of [...WALLET_ROWS, "events"]) {
    const [{ n }] = await sql.unsafe(`select count(*)::int as n from ${table} where wallet_id = $1`, [
      walletId,
    ]);
    counts[table] = n;
  }
  return counts;
}

async function otherRows(sql: Sql, walletId: string): Promise<string> {
  const parts = [];
  for (const table of [...WALLET_ROWS, "events", "wallets"]) {
    const [{ n }] = await sql.unsafe(`select count(*)::int as n from ${table} where wallet_id <> $1`, [
      walletId,
    ]);
    parts.push(`${table}=${n}`);
  }
  return parts.join(" ");
}

export async function measureErase(cluster: BenchCluster, events = 100_000): Promise<EraseRun> {
  const url = await cluster.createDatabase("bench_erase");
  const sql = cluster.connect("bench_erase");
  try {
    await migrate(sql);
    await seedLedger(sql, OTHER_EVENTS);
    const walletId = await sha256Hex("bench-erased-wallet-token-000000");
    await seedWalletHistory(sql, walletId, events);
    const before = await rowsOf(sql, walletId);
    const othersBefore = await otherRows(sql, walletId);
    const started = performance.now();
    const out = await new Deno.Command(Deno.execPath(), {
      args: [...await taskCommand("erase"), walletId],
      cwd: new URL("../../../", import.meta.url).pathname,
      env: { DATABASE_URL: url },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const seconds = (performance.now() - started) / 1000;
    const line = new TextDecoder().decode(out.stdout).trim();
    if (out.code !== 0) {
      throw new Error(
        `deno task erase failed (exit ${out.code}): ${line}\n${new TextDecoder().decode(out.stderr)}`,
      );
    }
    const result = JSON.parse(line) as { seconds: number; kvEntries: number };
    const after = await rowsOf(sql, walletId);
    const audit = await timeTask("audit", url, OTHER_EVENTS + events);
    return {
      events: before.events,
      kvEntries: before.kv_entries,
      callLogs: before.call_logs,
      seconds,
      taskSeconds: result.seconds,
      rowsLeft: WALLET_ROWS.reduce((sum, table) => sum + after[table], 0),
      eventsKept: after.events,
      otherRowsKept: await otherRows(sql, walletId) === othersBefore,
      auditClean: audit.clean,
    };
  } finally {
    await sql.end();
  }
}

export function eraseLines(run: EraseRun): string[] {
  const verdict = run.seconds < ERASE_TARGET_SECONDS ? "met" : "missed";
  return [
    `erase: a wallet of ${run.events.toLocaleString("en-US")} events (${run.kvEntries} KV entries, ` +
    `${run.callLogs} call-log rows) in ${run.seconds.toFixed(2)} s as the operator runs it ` +
    `(the erasure itself ${run.taskSeconds.toFixed(2)} s); target < ${ERASE_TARGET_SECONDS} s ${verdict}`,
    `erase: rows left ${run.rowsLeft}, events kept ${run.eventsKept}, other wallets untouched ` +
    `${run.otherRowsKept}, audit clean ${run.auditClean}`,
  ];
}
