// Billed GET /kv through HAProxy, with one instance in service and then with all of them, in the
// same run on the same wallets: wrk as `deno task bench` runs it, and the CPU time of every
// instance, of HAProxy and of the Postgres cluster per call.
import type { Haproxy } from "./haproxy.ts";
import type { Instance } from "./instances.ts";
import type { Check } from "./checks_limits.ts";
import { type RunResult, wrkRun } from "../bench/load.ts";
import { processCpuSeconds } from "../bench/system.ts";

export const THROUGHPUT_SECONDS = 10;
const WARM_UP_SECONDS = 2;

export interface ThroughputRun extends RunResult {
  instances: number;
  /** CPU microseconds per call of all the instances together, and of HAProxy. */
  instancesCpuUs: number;
  haproxyCpuUs: number;
  /** Date.now() at the measured load's start and end (the PromQL figures' window). */
  startedAt: number;
  endedAt: number;
}

async function measure(
  haproxy: Haproxy,
  instances: Instance[],
  target: { tokensFile: string; postmasterPid: number; inService: number },
): Promise<ThroughputRun> {
  const pids = instances.map((i) => i.process.pid()).filter((pid): pid is number => pid !== undefined);
  const cpu = () => pids.reduce((sum, pid) => sum + processCpuSeconds(pid), 0);
  const load = (seconds: number) =>
    wrkRun({ url: `${haproxy.url}/`, tokensFile: target.tokensFile, method: "GET", seconds }, {
      postmasterPid: target.postmasterPid,
    });
  await load(WARM_UP_SECONDS);
  const service0 = cpu();
  const haproxy0 = processCpuSeconds(haproxy.pid);
  const startedAt = Date.now();
  const result = await load(THROUGHPUT_SECONDS);
  const endedAt = Date.now();
  const perCall = (seconds: number) => Math.round((seconds * 1e6) / Math.max(1, result.calls));
  return {
    ...result,
    rate: Math.round(result.rate),
    instances: target.inService,
    instancesCpuUs: perCall(cpu() - service0),
    haproxyCpuUs: perCall(processCpuSeconds(haproxy.pid) - haproxy0),
    startedAt,
    endedAt,
  };
}

const describe = (r: ThroughputRun) =>
  `${r.instances} instance${r.instances > 1 ? "s" : ""}: ${r.rate.toLocaleString("en-US")}/s, ` +
  `p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, ${r.errors} errors; CPU per call: instances ` +
  `${r.instancesCpuUs} µs, HAProxy ${r.haproxyCpuUs} µs, Postgres ${r.postgresCpuUs} µs`;

/** One instance (the others in maintenance, taken out through the runtime API), then all. */
export async function throughput(
  haproxy: Haproxy,
  instances: Instance[],
  target: { tokensFile: string; postmasterPid: number },
) {
  const others = instances.slice(1).map((i) => i.name);
  for (const name of others) await haproxy.setState(name, "maint");
  await haproxy.waitFor(others, (status) => status === "MAINT");
  const one = await measure(haproxy, instances, { ...target, inService: 1 });
  for (const name of others) await haproxy.setState(name, "ready");
  await haproxy.waitFor(instances.map((i) => i.name), (status) => status === "UP");
  const all = await measure(haproxy, instances, { ...target, inService: instances.length });
  const figures = { one, all, ratio: Math.round((all.rate / one.rate) * 100) / 100 };
  const ok = one.errors === 0 && all.errors === 0;
  const line = `throughput, billed GET /kv through HAProxy, ${THROUGHPUT_SECONDS} s each at 64 ` +
    `connections on ${navigator.hardwareConcurrency} cores:\n  ${describe(one)}\n  ${describe(all)}\n` +
    `  ${instances.length} instances give ${figures.ratio} times the rate of one`;
  return { ok, line, figures } satisfies Check<typeof figures>;
}
