// The loads: wrk against the service (a random funded wallet per request, from a Lua script) and
// pgbench against the same work done one transaction per call; each run with the CPU time the
// service and the cluster spent on it.
import { clusterCpuSeconds, processCpuSeconds, run } from "./system.ts";

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
}

export interface CpuSources {
  servicePid?: number;
  postmasterPid: number;
}

/** Runs a load and charges the CPU time spent meanwhile to its calls. */
async function measured(cpu: CpuSources, load: () => Promise<Omit<RunResult, "postgresCpuUs">>) {
  const service0 = cpu.servicePid ? processCpuSeconds(cpu.servicePid) : 0;
  const postgres0 = clusterCpuSeconds(cpu.postmasterPid);
  const result = await load();
  const perCall = (seconds: number) => Math.round((seconds * 1e6) / Math.max(1, result.calls));
  return {
    ...result,
    ...(cpu.servicePid ? { serviceCpuUs: perCall(processCpuSeconds(cpu.servicePid) - service0) } : {}),
    postgresCpuUs: perCall(clusterCpuSeconds(cpu.postmasterPid) - postgres0),
  };
}

/** wrk's Lua script: every request bills a wallet picked at random from the tokens file. */
function wrkScript(tokensFile: string, method: "GET" | "POST"): string {
  const body = method === "POST" ? `string.rep("v", ${POST_VALUE_BYTES})` : "nil";
  return `
local tokens = {}
for line in io.lines("${tokensFile}") do tokens[#tokens + 1] = line end
-- Each thread has its own Lua state: seed each from its own table address.
math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16))
local body = ${body}
request = function()
  return wrk.format("${method}", "${BENCH_KEY_PATH}", { ["X-Token"] = tokens[math.random(#tokens)] }, body)
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

/** Billed calls through the service for `seconds`, each on a random wallet of the tokens file. */
export async function wrkRun(
  options: { url: string; tokensFile: string; method: "GET" | "POST"; seconds: number },
  cpu: CpuSources,
): Promise<RunResult> {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(script, wrkScript(options.tokensFile, options.method));
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
export const pgbenchWalletsSql = (wallets: number) => `
  insert into wallets (wallet_id, balance, version, created_at, last_used_at, deactivated_at)
  select lpad(w::text, 64, '0'), 1000000000, 0, now(), now(), null from generate_series(1, ${wallets}) w`;
