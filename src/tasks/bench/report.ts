// The bench's verdict: the honest ratios (median of the paired rounds and each round), the
// hot-wallet line, latency, CPU per call, the offline figures, and all of it as one JSON line.
import type { LoadFigures, Round } from "./service_load.ts";
import type { SweepPoint, TaskRun } from "./offline.ts";
import type { RunResult } from "./load.ts";
import type { LogBudget } from "../noisy_neighbour/budget_figures.ts";
import type { BatchSummary } from "../../ledger/batch_stats.ts";
import { embeddedLines, type EmbeddedMemory } from "./embedded.ts";
import { ERASE_TARGET_SECONDS, eraseLines, type EraseRun } from "./erase.ts";
import { metricsCost } from "./metrics_cost.ts";

export interface BenchFigures {
  machine: string;
  seconds: number;
  rounds: number;
  wallets: number;
  profile: boolean;
  load?: LoadFigures;
  ledger?: { events: number; audit: TaskRun; replay: TaskRun };
  sweep?: SweepPoint[];
  budget?: LogBudget;
  embedded?: EmbeddedMemory;
  erase?: EraseRun;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const round = (n: number, digits = 0) => Math.round(n * 10 ** digits) / 10 ** digits;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

type Side =
  | "get"
  | "post"
  | "logOffGet"
  | "logOffPost"
  | "baselineGet"
  | "baselinePost"
  | "pooledGet"
  | "pooledPost";

function sideOf(rounds: Round[], side: Side) {
  const ceiling = side === "get" || side.endsWith("Get") ? "getCeiling" : "postCeiling";
  const ratios = rounds.map((r) => r[side]!.rate / r[ceiling].rate);
  const runs = rounds.map((r) => r[side]!);
  return {
    ratio: round(median(ratios), 2),
    roundRatios: ratios.map((r) => round(r, 2)),
    rps: round(median(runs.map((r) => r.rate))),
    ceilingTps: round(median(rounds.map((r) => r[ceiling].rate))),
    p50Ms: round(median(runs.map((r) => r.p50Ms ?? NaN)), 2),
    p99Ms: round(median(runs.map((r) => r.p99Ms ?? NaN)), 2),
    worstP99Ms: Math.max(...runs.map((r) => r.p99Ms ?? NaN)),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    serviceCpuUs: round(median(runs.map((r) => r.serviceCpuUs ?? NaN))),
    postgresCpuUs: round(median(runs.map((r) => r.postgresCpuUs))),
    ceilingPostgresCpuUs: round(median(rounds.map((r) => r[ceiling].postgresCpuUs))),
    clientCpuUs: round(median(runs.map((r) => r.clientCpuUs))),
    machineCpuUs: round(median(runs.map((r) => r.machineCpuUs))),
    machineBusyPercent: round(median(runs.map((r) => r.machineBusyPercent))),
    ceilingClientCpuUs: round(median(rounds.map((r) => r[ceiling].clientCpuUs))),
    ceilingMachineCpuUs: round(median(rounds.map((r) => r[ceiling].machineCpuUs))),
    ceilingBusyPercent: round(median(rounds.map((r) => r[ceiling].machineBusyPercent))),
  };
}

/** Issue 22's targets: the ratio to pgbench, and the CPU per call beyond HTTP alone (service) and of Postgres. */
export const TARGETS = {
  get: { ratio: 1.0, serviceBeyondHttpUs: 70, postgresUs: 70 },
  post: { ratio: 0.8, serviceBeyondHttpUs: 90, postgresUs: 90 },
  p99Ms: 25,
  busyPercent: 90,
} as const;

/** What the targets leave of the machine's CPU per call, next to what a call costs and HTTP alone. */
function budgetLines(
  floor: RunResult,
  sides: Record<"get" | "post", ReturnType<typeof sideOf>>,
  json: Json,
): string[] {
  const budget: Json = {
    floor: {
      machineCpuUs: floor.machineCpuUs,
      serviceCpuUs: floor.serviceCpuUs,
      clientCpuUs: floor.clientCpuUs,
    },
  };
  const lines = [
    `CPU budget (the machine's CPU per call, every process and the kernel; a ratio can pass the ` +
    `target only if the call costs the machine at most the ceiling's cost divided by the target):`,
  ];
  for (const side of ["get", "post"] as const) {
    const s = sides[side];
    const target = TARGETS[side];
    const allowed = round(s.ceilingMachineCpuUs / target.ratio);
    const beyondHttp = round(s.serviceCpuUs - (floor.serviceCpuUs ?? 0));
    budget[side] = {
      target: target.ratio,
      allowedMachineCpuUs: allowed,
      machineCpuUs: s.machineCpuUs,
      serviceBeyondHttpUs: beyondHttp,
      postgresCpuUs: s.postgresCpuUs,
    };
    lines.push(
      `  ${side.toUpperCase()}: pgbench ${s.ceilingMachineCpuUs} µs per transaction (${s.ceilingBusyPercent}% ` +
        `busy), so ${target.ratio}x allows ${allowed} µs; the billed call costs ${s.machineCpuUs} µs ` +
        `(${s.machineBusyPercent}% busy, target ${TARGETS.busyPercent}%): service ${s.serviceCpuUs} (beyond HTTP ` +
        `${beyondHttp}, target ${target.serviceBeyondHttpUs}), postgres ${s.postgresCpuUs} (target ` +
        `${target.postgresUs}), wrk ${s.clientCpuUs}, the rest kernel`,
    );
  }
  lines.push(
    `  HTTP alone (GET /healthz, same server and wrk script, no database): ${floor.machineCpuUs} µs per ` +
      `request (service ${floor.serviceCpuUs}, wrk ${floor.clientCpuUs}), ${fmt(floor.rate)} req/s`,
  );
  json.cpu_budget = budget;
  return lines;
}

/** The measured service's batches over the rounds: the median of each figure of its runs' lines. */
export function batchLine(rounds: Round[], method: "get" | "post", json: Json): string | undefined {
  const summaries = rounds.map((r) => method === "get" ? r.getBatches : r.postBatches)
    .filter((b): b is BatchSummary => b !== undefined);
  if (summaries.length === 0) return undefined;
  const of = (key: keyof BatchSummary) => round(median(summaries.map((b) => b[key])), 2);
  const figures = {
    sizeP50: of("sizeP50"),
    sizeP99: of("sizeP99"),
    waitMsP50: of("waitMsP50"),
    waitMsP99: of("waitMsP99"),
    workMsP50: of("workMsP50"),
    workMsP99: of("workMsP99"),
    dbMsP50: of("dbMsP50"),
    dbMsP99: of("dbMsP99"),
    jsMsP50: of("jsMsP50"),
    jsMsP99: of("jsMsP99"),
  };
  json[`${method}_batches`] = figures;
  const f = figures;
  return `  ${method.toUpperCase()} batches (the service's "ledger" lines, median of ${summaries.length} runs): ` +
    `size p50 ${f.sizeP50}, p99 ${f.sizeP99} calls; queue wait p50 ${f.waitMsP50} ms, p99 ${f.waitMsP99} ms; ` +
    `work p50 ${f.workMsP50} ms, p99 ${f.workMsP99} ms, of which waiting for Postgres p50 ${f.dbMsP50} ms, ` +
    `p99 ${f.dbMsP99} ms, and JavaScript p50 ${f.jsMsP50} ms, p99 ${f.jsMsP99} ms`;
}

function hotOf(hot: LoadFigures["hot"]) {
  const rate = (r: RunResult) => round(r.rate);
  return {
    ceilingTps: rate(hot.ceiling),
    getRps: rate(hot.get),
    getRatio: round(hot.get.rate / hot.ceiling.rate, 2),
    postRps: rate(hot.post),
    postRatio: round(hot.post.rate / hot.ceiling.rate, 2),
    getP99Ms: hot.get.p99Ms,
    postP99Ms: hot.post.p99Ms,
  };
}

type Json = Record<string, unknown>;

/** Issue 23's target: encryption costs at most this share of billed POST /kv throughput. */
export const ENCRYPTION_COST_TARGET = 0.1;

/**
 * What this commit costs against the baseline commit, paired within each round (the two services
 * ran minutes apart, in turning order): the median of the per-round throughput ratios.
 */
function baselineCostLine(rounds: Round[], json: Json): string {
  const ratios = (side: "get" | "post") => {
    const other = side === "get" ? "baselineGet" : "baselinePost";
    return rounds.map((r) => round(r[side].rate / r[other]!.rate, 3));
  };
  const [get, post] = [ratios("get"), ratios("post")];
  const cost = round(1 - median(post), 3);
  const verdict = cost <= ENCRYPTION_COST_TARGET ? "met" : "missed";
  json.versus_baseline = {
    get: median(get),
    post: median(post),
    getRounds: get,
    postRounds: post,
    postCost: cost,
  };
  return `this commit against the baseline, paired within each round: GET throughput ${median(get)} ` +
    `(rounds ${get.join(", ")}), POST ${median(post)} (rounds ${post.join(", ")}); POST costs ` +
    `${round(cost * 100, 1)}% (issue 23's encryption target: at most ${
      ENCRYPTION_COST_TARGET * 100
    }%, ${verdict})`;
}

function loadLines(load: LoadFigures, wallets: number, json: Json): string[] {
  const lines: string[] = [];
  const sides = { get: sideOf(load.rounds, "get"), post: sideOf(load.rounds, "post") };
  for (const side of ["get", "post"] as const) {
    const s = sides[side];
    lines.push(
      `${side.toUpperCase()} /kv on ${wallets} random wallets: ratio ${s.ratio} (median; rounds ` +
        `${s.roundRatios.join(", ")}), ${fmt(s.rps)} req/s vs pgbench ${fmt(s.ceilingTps)} tps; ` +
        `p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms (worst ${s.worstP99Ms} ms), ${s.errors} errors; CPU per call ` +
        `service ${s.serviceCpuUs} µs, postgres ${s.postgresCpuUs} µs (pgbench: ${s.ceilingPostgresCpuUs} µs)`,
    );
    json[side] = s;
  }
  lines.push(...budgetLines(load.floor, sides, json));
  for (const method of ["get", "post"] as const) {
    const line = batchLine(load.rounds, method, json);
    if (line) lines.push(line);
  }
  {
    const [get, post] = [sideOf(load.rounds, "logOffGet"), sideOf(load.rounds, "logOffPost")];
    const side = (s: typeof get) =>
      `ratio ${s.ratio} (${fmt(s.rps)} req/s, p99 ${s.p99Ms} ms, CPU service ${s.serviceCpuUs} µs)`;
    lines.push(
      `beside it, labelled: request log off (LOG_REQUESTS=0, not the default), same rounds: GET ${
        side(get)
      }; ` +
        `POST ${side(post)}`,
    );
    json.log_off = { get, post };
  }
  const metrics = metricsCost(load.rounds);
  if (metrics) {
    lines.push(metrics.line);
    json.metrics_cost = metrics.json;
  }
  if (load.rounds[0]?.baselineGet) {
    const [get, post] = [sideOf(load.rounds, "baselineGet"), sideOf(load.rounds, "baselinePost")];
    lines.push(
      `baseline (an earlier commit, same rounds): GET ratio ${get.ratio} (${fmt(get.rps)} req/s, p99 ` +
        `${get.p99Ms} ms, CPU ${get.serviceCpuUs} µs), POST ratio ${post.ratio} (${
          fmt(post.rps)
        } req/s, p99 ` +
        `${post.p99Ms} ms, CPU ${post.serviceCpuUs} µs)`,
    );
    json.baseline = { get, post };
    lines.push(baselineCostLine(load.rounds, json));
  }
  if (load.rounds[0]?.pooledGet) {
    const [get, post] = [sideOf(load.rounds, "pooledGet"), sideOf(load.rounds, "pooledPost")];
    const side = (s: typeof get) =>
      `ratio ${s.ratio} (${fmt(s.rps)} req/s, p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms, ${s.errors} errors, ` +
      `CPU service ${s.serviceCpuUs} µs, postgres ${s.postgresCpuUs} µs)`;
    lines.push(`through PgBouncer (transaction mode, same rounds): GET ${side(get)}; POST ${side(post)}`);
    json.pooled = { get, post };
  }
  const h = hotOf(load.hot);
  lines.push(
    `second line, hot wallet (row-lock contention): pgbench ${fmt(h.ceilingTps)} tps on one wallet; ` +
      `service GET ${fmt(h.getRps)} req/s (${h.getRatio}), POST ${fmt(h.postRps)} req/s (${h.postRatio})`,
    `audit after the load: ${
      load.auditClean ? "clean" : "MISMATCH"
    }; service peak RSS ${load.servicePeakRssMb} MB`,
  );
  Object.assign(json, { hot: h, audit_clean: load.auditClean, service_peak_rss_mb: load.servicePeakRssMb });
  if (load.profile) json.profile = load.profile;
  return lines;
}

function ledgerLines(ledger: NonNullable<BenchFigures["ledger"]>, json: Json): string[] {
  const { events, audit, replay } = ledger;
  json.ledger = {
    events,
    audit_seconds: round(audit.seconds, 2),
    audit_events_per_second: audit.eventsPerSecond,
    audit_peak_rss_mb: audit.peakRssMb,
    replay_seconds: round(replay.seconds, 2),
    replay_events_per_second: replay.eventsPerSecond,
    replay_peak_rss_mb: replay.peakRssMb,
    clean: audit.clean && replay.clean,
  };
  return [audit, replay].map((run) =>
    `${run.task} over ${fmt(events)} events: ${round(run.seconds, 2)} s, ${
      fmt(run.eventsPerSecond)
    } events/s, ` +
    `peak RSS ${run.peakRssMb} MB, ${run.clean ? "clean" : "DIFFERENCES"}`
  );
}

function sweepLine(sweep: SweepPoint[], json: Json): string {
  json.sweep = sweep.map((p) => ({
    ...p,
    seconds: round(p.seconds, 3),
    rowDeleteSeconds: round(p.rowDeleteSeconds, 3),
  }));
  const points = sweep.map((p) =>
    `${fmt(p.rows)} rows: ${round(p.seconds * 1000)} ms (${p.droppedPartitions} partition, ` +
    `${fmt(p.droppedRows)} rows dropped; a row-by-row DELETE of ${fmt(p.rowDeleteRows)} rows: ` +
    `${round(p.rowDeleteSeconds * 1000)} ms)`
  );
  return `call-log sweep: ${points.join("; ")}`;
}

/** The summary lines, then the JSON line. */
export function summarize(figures: BenchFigures): string[] {
  const { machine, seconds, rounds, wallets, profile } = figures;
  const json: Json = { machine, seconds, rounds, wallets, profile };
  const lines = ["", `== summary (${machine})`];
  if (figures.load) lines.push(...loadLines(figures.load, wallets, json));
  if (figures.ledger) lines.push(...ledgerLines(figures.ledger, json));
  if (figures.sweep) lines.push(sweepLine(figures.sweep, json));
  if (figures.budget) {
    const { maxBytesPerCredit, worstPaid, freeBytesPerDay } = figures.budget;
    json.log_budget = { maxBytesPerCredit, worstPaid, freeBytesPerDay };
    lines.push(
      `permanent-log budget: at most ${fmt(maxBytesPerCredit)} bytes of events per credit (${worstPaid}), ` +
        `${freeBytesPerDay === null ? "unbounded" : `${fmt(freeBytesPerDay)} bytes`} a day for free`,
    );
  }
  if (figures.embedded) {
    json.embedded = { ...figures.embedded };
    lines.push(...embeddedLines(figures.embedded));
  }
  if (figures.erase) {
    json.erase = { ...figures.erase, target: ERASE_TARGET_SECONDS };
    lines.push(...eraseLines(figures.erase));
  }
  lines.push(JSON.stringify(json));
  return lines;
}

/** The profile's top items: service functions by self time, statements by total time. */
export function profileLines(profile: NonNullable<LoadFigures["profile"]>): string[] {
  return [
    "",
    "== profile (the figures above ran under the profiler: slower than without it)",
    "service CPU profile, top functions by self time:",
    ...profile.functions.map((f) =>
      `  ${String(f.percent).padStart(5)}% ${String(f.selfMs).padStart(7)} ms  ${f.name}`
    ),
    "pg_stat_statements, top statements by total time:",
    ...profile.statements.map((s) =>
      `  ${String(s.percent).padStart(5)}% ${String(s.totalMs).padStart(7)} ms ${
        fmt(s.calls).padStart(9)
      } calls ` +
      `${String(s.meanMs).padStart(7)} ms/call  ${s.query}`
    ),
  ];
}
