// `deno task cluster` through Prometheus: Debian's Prometheus scrapes the three instances' /metrics
// every second with the shipped configuration, and each throughput run's figures are read back with
// PromQL beside wrk's own: billed calls a second (all instances, and each), their p99 from the
// latency histogram, and the credits charged.
import type { Instance } from "./instances.ts";
import type { ThroughputRun } from "./throughput.ts";
import type { Check } from "./checks_limits.ts";
import { type PrometheusServer, startPrometheus } from "../prometheus_server.ts";
import { freePort, sleep } from "../bench/system.ts";

const KV_BILLED = 'credit_api_billed_calls_total{endpoint="kv"}';
const KV_LATENCY = 'credit_api_http_request_duration_seconds_bucket{route="/kv/:bucket/:key"}';
/** Scrapes after a run's end before its counters are read: at 1 s a scrape, two have passed. */
const SETTLE_MS = 2_500;

export function startClusterPrometheus(instances: Instance[]): Promise<PrometheusServer> {
  return startPrometheus({ targets: instances.map((i) => `127.0.0.1:${i.metricsPort}`), port: freePort() });
}

export interface PromqlRun {
  instances: number;
  /** wrk's calls a second, and Prometheus' billed calls a second over the same window. */
  wrkRate: number;
  promRate: number;
  perInstance: Record<string, number>;
  promP99Ms: number | undefined;
}

async function readRun(prometheus: PrometheusServer, run: ThroughputRun): Promise<PromqlRun> {
  const seconds = (run.endedAt - run.startedAt) / 1000;
  const window = `${Math.max(1, Math.round(seconds))}s`;
  const atStart = await prometheus.queryBy(`sum by (instance) (${KV_BILLED})`, "instance", run.startedAt);
  const atEnd = await prometheus.queryBy(`sum by (instance) (${KV_BILLED})`, "instance", run.endedAt + 1_000);
  const perInstance = Object.fromEntries(
    Object.entries(atEnd).map((
      [instance, n],
    ) => [instance, Math.round((n - (atStart[instance] ?? 0)) / seconds)]),
  );
  const p99 = await prometheus.query(
    `histogram_quantile(0.99, sum by (le) (increase(${KV_LATENCY}[${window}])))`,
    run.endedAt,
  );
  return {
    instances: run.instances,
    wrkRate: run.rate,
    promRate: Object.values(perInstance).reduce((sum, n) => sum + n, 0),
    perInstance,
    promP99Ms: p99 === undefined || Number.isNaN(p99) ? undefined : Math.round(p99 * 1000),
  };
}

/** The throughput runs as Prometheus saw them; ok when its billed rate is within 10% of wrk's. */
export async function promqlFigures(prometheus: PrometheusServer, runs: ThroughputRun[]) {
  await sleep(SETTLE_MS);
  const read = [];
  for (const run of runs) read.push(await readRun(prometheus, run));
  const charged = await prometheus.query("sum(credit_api_credits_charged_total)");
  const up = await prometheus.query('count(up{job="credit-api"} == 1)');
  const ok = up === runs.at(-1)?.instances &&
    read.every((r) => Math.abs(r.promRate - r.wrkRate) <= r.wrkRate * 0.1);
  const describe = (r: PromqlRun) =>
    `${r.instances} instance${
      r.instances > 1 ? "s" : ""
    }: wrk ${r.wrkRate}/s, PromQL billed ${r.promRate}/s (` +
    Object.entries(r.perInstance).map(([i, n]) => `${i} ${n}/s`).join(", ") +
    `), PromQL p99 ${r.promP99Ms} ms`;
  const line =
    `Prometheus (Debian's, shipped scrape configuration, 1 s scrapes) on the same runs, ${up} targets up:\n` +
    read.map((r) => `  ${describe(r)}`).join("\n") + `\n  credits charged so far (all instances): ${charged}`;
  return { ok, line, figures: { runs: read, charged, up } } satisfies Check<unknown>;
}
