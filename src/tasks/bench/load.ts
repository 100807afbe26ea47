// The loads: wrk against the service (a random funded wallet per request, from a Lua script) and
// pgbench against the same work done one transaction per call; each run with the CPU time the
// service, the cluster, the load generator and the whole machine spent on it.
import {
  clusterCpuSeconds,
  machineCpuSeconds,
  processCpuSeconds,
  reapedChildrenCpuSeconds,
  run,
} from "./system.ts";
import { migrate } from "../../db/migrate.ts";
import type { BenchCluster } from "./cluster.ts";

export const CONNECTIONS = 64;
/** Size of the value POSTed: the 100-byte write. */
export const POST_VALUE_BYTES = 100;
/** The key every funded wallet has written, so that GETs find it. */
export const BENCH_KEY_PATH = "/kv/bench/key";

export interface RunResult {
  /** Calls (or transactions) per second. */
  rate: number;
  calls: number;
  /** Latency percentiles (wrk) or the mean (pgbench, which gives no percentiles without logging). */
  p50Ms?: number;
  p99Ms?: number;
  meanMs?: number;
  errors: number;
  /** CPU microseconds per call of the service process (wrk runs only). */
  serviceCpuUs?: number;
  /** CPU microseconds per call of all the cluster's processes. */
  postgresCpuUs: number;
  /** CPU microseconds per call of the load generator (wrk or pgbench). */
  clientCpuUs: number;
  /** CPU microseconds per call of the whole machine: every process and the kernel's network work. */
  machineCpuUs: number;
  /** How busy the machine's cores were during the run, in percent of all of them. */
  machineBusyPercent: number;
}

export interface CpuSources {
  servicePid?: number;
  postmasterPid: number;
}

/** Runs a load and charges the CPU time spent meanwhile to its calls. */
async function measured(
  cpu: CpuSources,
  load: () => Promise<
    Omit<RunResult, "postgresCpuUs" | "clientCpuUs" | "machineCpuUs" | "machineBusyPercent">
  >,
): Promise<RunResult> {
  const service0 = cpu.servicePid ? processCpuSeconds(cpu.servicePid) : 0;
  const postgres0 = clusterCpuSeconds(cpu.postmasterPid);
  const client0 = reapedChildrenCpuSeconds();
  const machine0 = machineCpuSeconds();
  const result = await load();
  const machine1 = machineCpuSeconds();
  const perCall = (seconds: number) => Math.round((seconds * 1e6) / Math.max(1, result.calls));
  return {
    ...result,
    ...(cpu.servicePid ? { serviceCpuUs: perCall(processCpuSeconds(cpu.servicePid) - service0) } : {}),
    postgresCpuUs: perCall(clusterCpuSeconds(cpu.postmasterPid) - postgres0),
    clientCpuUs: perCall(reapedChildrenCpuSeconds() - client0),
    machineCpuUs: perCall(machine1.busy - machine0.busy),
    machineBusyPercent: Math.round(
      (100 * (machine1.busy - machine0.busy)) / Math.max(0.01, machine1.all - machine0.all),
    ),
  };
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

export function describeRun(label: string, r: RunResult): string {
  const latency = r.p99Ms !== undefined ? `p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms` : `mean ${r.meanMs} ms`;
  const cpu = r.serviceCpuUs !== undefined ? `service ${r.serviceCpuUs} µs + ` : "";
  return `${label}: ${fmt(r.rate)}/s, ${latency}, ${r.errors} errors, CPU per call ${cpu}postgres ` +
    `${r.postgresCpuUs} µs + load generator ${r.clientCpuUs} µs; machine ${r.machineCpuUs} µs ` +
    `(${r.machineBusyPercent}% busy)`;
}

/** wrk's Lua script: every request bills a wallet picked at random from the tokens file. */
function wrkScript(tokensFile: string, method: "GET" | "POST", path: string): string {
  const body = method === "POST" ? `string.rep("v", ${POST_VALUE_BYTES})` : "nil";
  return `
local tokens = {}
for line in io.lines("${tokensFile}") do tokens[#tokens + 1] = line end
-- Each thread has its own Lua state: seed each from its own table address.
math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16))
local body = ${body}
request = function()
  return wrk.format("${method}", "${path}", { ["X-Token"] = tokens[math.random(#tokens)] }, body)
end
`;
}

function parseWrk(text: string) {
  const num = (re: RegExp) => Number(text.match(re)?.[1] ?? NaN);
  const ms = (label: string) => {
    const m = text.match(new RegExp(`\\s${label}%\\s+([\\d.]+)(us|ms|s)`));
    if (!m) return NaN;
    const value = Number(m[1]);
    return m[2] === "us" ? value / 1000 : m[2] === "s" ? value * 1000 : value;
  };
  const non2xx = num(/Non-2xx or 3xx responses: (\d+)/) || 0;
  const socket = text.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/);
  const socketErrors = socket ? socket.slice(1).map(Number).reduce((a, b) => a + b, 0) : 0;
  return {
    rate: num(/Requests\/sec:\s+([\d.]+)/),
    calls: num(/(\d+) requests in/),
    p50Ms: ms("50"),
    p99Ms: ms("99"),
    errors: non2xx + socketErrors,
  };
}

/**
 * Calls through the service for `seconds`, each with the token of a random wallet of the tokens
 * file: billed calls on the bench key, or `path` (the /healthz floor).
 */
export async function wrkRun(
  options: { url: string; tokensFile: string; method: "GET" | "POST"; seconds: number; path?: string },
  cpu: CpuSources,
): Promise<RunResult> {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(
    script,
    wrkScript(options.tokensFile, options.method, options.path ?? BENCH_KEY_PATH),
  );
  try {
    return await measured(cpu, async () =>
      parseWrk(
        await run("wrk", [
          "-t2",
          `-c${CONNECTIONS}`,
          `-d${options.seconds}s`,
          "--latency",
          "-s",
          script,
          options.url,
        ]),
      ));
  } finally {
    await Deno.remove(script);
  }
}

/**
 * What a billed call costs the database at the least, one transaction per call: the debit of
 * the wallet (a conditional update, as the ledger's) and the append of its CallBilled event,
 * with the service's statement shapes and event size. `wallets` 1 is the hot-wallet line.
 */
export function pgbenchScript(wallets: number): string {
  const data = JSON.stringify({
    callId: "x".repeat(20),
    method: "GET",
    path: BENCH_KEY_PATH,
    endpoint: "kv",
    status: 200,
    cost: 1,
    balance: 999999,
    ms: 1,
  });
  return `\\set w random(1, ${wallets})
BEGIN;
UPDATE wallets SET balance = balance - 1, version = version + 1, last_used_at = now()
  WHERE wallet_id = lpad(:w::text, 64, '0') AND balance >= 1 RETURNING version AS v \\gset
INSERT INTO events (wallet_id, version, type, data, recorded_at)
  VALUES (lpad(:w::text, 64, '0'), :v, 'CallBilled', '${data}', now());
END;
`;
}

/** pgbench for `seconds` at the same concurrency as wrk, prepared statements like the service's driver. */
export async function pgbenchRun(
  options: { url: string; wallets: number; seconds: number },
  cpu: CpuSources,
): Promise<RunResult> {
  const script = await Deno.makeTempFile({ suffix: ".sql" });
  await Deno.writeTextFile(script, pgbenchScript(options.wallets));
  try {
    return await measured(cpu, async () => {
      const text = await run("pgbench", [
        "-n",
        "-M",
        "prepared",
        "-c",
        String(CONNECTIONS),
        "-j",
        "2",
        "-T",
        String(options.seconds),
        "-f",
        script,
        options.url,
      ]);
      const failed = Number(text.match(/number of failed transactions: (\d+)/)?.[1] ?? 0);
      const meanMs = Number(text.match(/latency average = ([\d.]+) ms/)?.[1] ?? NaN);
      return {
        rate: Number(text.match(/tps = ([\d.]+)/)?.[1] ?? NaN),
        calls: Number(text.match(/number of transactions actually processed: (\d+)/)?.[1] ?? 0),
        meanMs,
        errors: failed,
      };
    });
  } finally {
    await Deno.remove(script);
  }
}

/** A database for pgbench: the service's schema with `wallets` funded wallets. */
const pgbenchWalletsSql = (wallets: number) => `
  insert into wallets (wallet_id, balance, version, created_at, last_used_at, deactivated_at)
  select lpad(w::text, 64, '0'), 1000000000, 0, now(), now(), null from generate_series(1, ${wallets}) w`;

/** pgbench's database on the bench's cluster: the service's schema and its funded wallets. */
export async function pgbenchDatabase(cluster: BenchCluster, wallets: number): Promise<string> {
  const url = await cluster.createDatabase("bench_pgbench");
  const sql = cluster.connect("bench_pgbench");
  await migrate(sql);
  await sql.unsafe(pgbenchWalletsSql(wallets));
  await sql`analyze`;
  await sql.end();
  return url;
}
