// `deno task bench`: the service against the honest ceiling, on a PostgreSQL 15 cluster of its own
// (created on a spare port and removed after): interleaved paired rounds of billed GET and POST
// /kv on random funded wallets against pgbench doing the same debit and append one transaction per
// call, the hot-wallet line, audit and replay speed over a seeded ledger, the call-log sweep as the
// table grows, and the permanent-log budget (bytes of `events` per credit spent and per day for free);
// on request (BENCH_ONLY=large) the same rounds on a database of a million wallets seeded by COPY.
// Needs pg_createcluster and PostgreSQL 15, wrk and pgbench (installed from Debian's packages when
// missing). The `embedded` part (the service's memory on the embedded database) needs none of these.
// The last line is every figure as one JSON object.
import { createCluster, ensureClusterTools } from "./bench/cluster.ts";
import { describeMachine, ensureTool, log } from "./bench/system.ts";
import { serviceLoad } from "./bench/service_load.ts";
import { measureSweep, timeTask } from "./bench/offline.ts";
import { seedLedger } from "./bench/ledger_seed.ts";
import { migrate } from "../db/migrate.ts";
import { type BenchFigures, profileLines, summarize } from "./bench/report.ts";
import type { BenchCluster } from "./bench/cluster.ts";
import { benchPooler } from "./bench/pooler.ts";
import { startService } from "./bench/service.ts";
import { measureLogBudget } from "./noisy_neighbour/log_budget.ts";
import { budgetLines, type LogBudget } from "./noisy_neighbour/budget_figures.ts";
import { largeDatabaseMeasure, largeJson, largeLines } from "./bench/large_database.ts";
import { embeddedLines, measureEmbeddedMemory } from "./bench/embedded.ts";
import { eraseLines, measureErase } from "./bench/erase.ts";

/** The parts of the bench; BENCH_ONLY picks some (comma-separated). */
const PARTS = ["load", "ledger", "sweep", "budget", "erase", "embedded", "large"] as const;
type Part = typeof PARTS[number];
/** Without BENCH_ONLY: all but `large`, which needs tens of GB of disk and most of an hour. */
const DEFAULT_PARTS = PARTS.filter((part) => part !== "large");

function positiveInt(name: string, fallback: number): number {
  const raw = Deno.env.get(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`Invalid ${name} "${raw}": must be a positive integer`);
  }
  return value;
}

function benchParts(): Set<Part> {
  const raw = Deno.env.get("BENCH_ONLY");
  if (!raw) return new Set(DEFAULT_PARTS);
  const parts = raw.split(",").map((p) => p.trim());
  for (const part of parts) {
    if (!PARTS.includes(part as Part)) {
      throw new Error(`Invalid BENCH_ONLY part "${part}": must be ${PARTS.join(", ")}`);
    }
  }
  return new Set(parts as Part[]);
}

const config = {
  seconds: positiveInt("BENCH_SECONDS", 10),
  rounds: positiveInt("BENCH_ROUNDS", 3),
  wallets: positiveInt("BENCH_WALLETS", 10_000),
  ledgerEvents: positiveInt("BENCH_LEDGER_EVENTS", 1_000_000),
  sweepRows: positiveInt("BENCH_SWEEP_ROWS", 10_000_000),
  profile: Deno.env.get("BENCH_PROFILE") === "1",
  // A checkout of an earlier commit (its own deno.json and src/): its service takes the same rounds.
  baselineDir: Deno.env.get("BENCH_BASELINE_DIR") || undefined,
  // BENCH_POOLER=pgbouncer: a service through PgBouncer takes the same rounds beside the direct one.
  pooler: benchPooler(Deno.env.get("BENCH_POOLER")),
  parts: benchParts(),
  large: {
    wallets: positiveInt("BENCH_LARGE_WALLETS", 1_000_000),
    kvEntries: positiveInt("BENCH_LARGE_KV", 10_000_000),
    events: positiveInt("BENCH_LARGE_EVENTS", 50_000_000),
  },
};

async function ledgerMeasures(cluster: BenchCluster): Promise<BenchFigures["ledger"]> {
  const url = await cluster.createDatabase("bench_ledger");
  const sql = cluster.connect("bench_ledger");
  try {
    await migrate(sql);
    const started = performance.now();
    const { events } = await seedLedger(sql, config.ledgerEvents);
    log(
      `seeded ${events.toLocaleString("en-US")} events in ${
        ((performance.now() - started) / 1000).toFixed(1)
      } s`,
    );
    const audit = await timeTask("audit", url, events);
    log(`audit: ${audit.seconds.toFixed(2)} s, peak RSS ${audit.peakRssMb} MB (${audit.firstLine})`);
    const replay = await timeTask("replay", url, events);
    log(`replay: ${replay.seconds.toFixed(2)} s, peak RSS ${replay.peakRssMb} MB (${replay.firstLine})`);
    return { events, audit, replay };
  } finally {
    await sql.end();
  }
}

async function sweepMeasure(cluster: BenchCluster) {
  await cluster.createDatabase("bench_sweep");
  const sql = cluster.connect("bench_sweep");
  try {
    const sizes: [number, number] = [Math.max(1, Math.round(config.sweepRows / 10)), config.sweepRows];
    const points = await measureSweep(sql, sizes);
    for (const p of points) log(`sweep at ${p.rows} call-log rows: ${(p.seconds * 1000).toFixed(0)} ms`);
    return points;
  } finally {
    await sql.end();
  }
}

/** The permanent-log budget (issue 21): bytes of `events` per credit and per day for free, measured. */
async function budgetMeasure(cluster: BenchCluster): Promise<LogBudget> {
  const service = await startService({ DATABASE_URL: await cluster.createDatabase("bench_budget") }, {
    funding: true, // its wallets come from their own client addresses
  });
  const sql = cluster.connect("bench_budget");
  try {
    const budget = await measureLogBudget({ url: service.url, sql });
    for (const line of budgetLines(budget)) log(line);
    return budget;
  } finally {
    await sql.end();
    await service.stop();
  }
}

async function main() {
  // The embedded part needs no cluster: alone, it runs without one.
  if (config.parts.size === 1 && config.parts.has("embedded")) {
    const figures: BenchFigures = { machine: await describeMachine(), ...config, profile: config.profile };
    figures.embedded = await measureEmbeddedMemory();
    for (const line of summarize(figures)) log(line);
    return;
  }
  await ensureClusterTools();
  await ensureTool("wrk", "wrk");
  await ensureTool("pgbench", "postgresql-contrib");
  const machine = await describeMachine();
  log(`machine: ${machine}`);
  log(
    `${config.rounds} rounds of ${config.seconds} s runs, ${config.wallets} wallets; parts: ${[
      ...config.parts,
    ]}`,
  );
  const cluster = await createCluster({ profile: config.profile });
  const cleanUp = async () => {
    await cluster.drop().catch((error) => log(`could not remove cluster ${cluster.name}: ${error}`));
  };
  Deno.addSignalListener("SIGINT", () => cleanUp().finally(() => Deno.exit(130)));
  try {
    const figures: BenchFigures = { machine, ...config, profile: config.profile };
    if (config.parts.has("load")) figures.load = await serviceLoad(cluster, config);
    if (config.parts.has("ledger")) figures.ledger = await ledgerMeasures(cluster);
    if (config.parts.has("sweep")) figures.sweep = await sweepMeasure(cluster);
    if (config.parts.has("budget")) figures.budget = await budgetMeasure(cluster);
    if (config.parts.has("erase")) {
      figures.erase = await measureErase(cluster);
      for (const line of eraseLines(figures.erase)) log(line);
    }
    const large = config.parts.has("large") ? await largeDatabaseMeasure(cluster, config) : undefined;
    if (config.parts.has("embedded")) {
      figures.embedded = await measureEmbeddedMemory();
      for (const line of embeddedLines(figures.embedded)) log(line);
    }
    if (figures.load?.profile) { for (const line of profileLines(figures.load.profile)) log(line); }
    const summary = summarize(figures);
    if (large) {
      // The JSON line stays last and holds every figure.
      const json = JSON.parse(summary.pop()!);
      summary.push(...largeLines(large), JSON.stringify({ ...json, large: largeJson(large) }));
    }
    for (const line of summary) log(line);
  } finally {
    await cleanUp();
  }
}

if (import.meta.main) await main();
