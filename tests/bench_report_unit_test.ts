// The bench's verdict from given runs: the paired ratios, the CPU budget the targets leave per
// call, and the CPU readers it is built on.
import assert from "node:assert/strict";
import { summarize } from "../src/tasks/bench/report.ts";
import type { RunResult } from "../src/tasks/bench/load.ts";
import { batchesOfRuns, type LoadFigures, type Round } from "../src/tasks/bench/service_load.ts";
import type { BatchSummary } from "../src/ledger/batch_stats.ts";
import { machineCpuSeconds, reapedChildrenCpuSeconds } from "../src/tasks/bench/system.ts";

function run(rate: number, machineCpuUs: number, extra: Partial<RunResult> = {}): RunResult {
  return {
    rate,
    calls: rate * 10,
    errors: 0,
    postgresCpuUs: 100,
    clientCpuUs: 30,
    machineCpuUs,
    machineBusyPercent: 99,
    ...extra,
  };
}

function batches(sizeP50: number, dbMsP50: number): BatchSummary {
  return {
    batches: 100,
    calls: 100 * sizeP50,
    sizeP50,
    sizeP99: 2 * sizeP50,
    waitMsP50: 1,
    waitMsP99: 4,
    workMsP50: dbMsP50 + 0.5,
    workMsP99: 20,
    dbMsP50,
    dbMsP99: 18,
    jsMsP50: 0.5,
    jsMsP99: 2,
  };
}

function round(getRate: number, ceilingRate: number, extra: Partial<Round> = {}): Round {
  const service = { p50Ms: 20, p99Ms: 60, serviceCpuUs: 300 };
  return {
    get: run(getRate, 700, service),
    getCeiling: run(ceilingRate, 400),
    post: run(getRate / 2, 900, service),
    postCeiling: run(ceilingRate, 420),
    logOffGet: run(getRate * 1.1, 650, service),
    logOffPost: run(getRate / 2, 880, service),
    ...extra,
  };
}

function figures(rounds: Round[]): LoadFigures {
  return {
    rounds,
    floor: run(9000, 150, { serviceCpuUs: 60, clientCpuUs: 40 }),
    hot: { ceiling: run(800, 2000), get: run(4000, 500), post: run(3000, 600) },
    auditClean: true,
    auditLine: "audit: clean",
    servicePeakRssMb: 200,
  };
}

function verdict(load: LoadFigures) {
  const lines = summarize({
    machine: "test machine",
    seconds: 10,
    rounds: 3,
    wallets: 10,
    profile: false,
    load,
  });
  return { lines, json: JSON.parse(lines.at(-1)!) };
}

Deno.test("the ratio is the median of the paired rounds, each service run over the pgbench run beside it", () => {
  const { json } = verdict(figures([round(1000, 4000), round(3000, 4000), round(2000, 4000)]));
  assert.deepEqual(json.get.roundRatios, [0.25, 0.75, 0.5]);
  assert.equal(json.get.ratio, 0.5);
  assert.deepEqual(json.post.roundRatios, [0.13, 0.38, 0.25]);
});

Deno.test("the CPU budget divides the ceiling's machine CPU per transaction by each target", () => {
  const { lines, json } = verdict(figures([round(1000, 4000), round(1200, 4000), round(1100, 4000)]));
  assert.deepEqual(json.cpu_budget.get, {
    target: 1,
    allowedMachineCpuUs: 400,
    machineCpuUs: 700,
    serviceBeyondHttpUs: 240,
    postgresCpuUs: 100,
  });
  assert.deepEqual(json.cpu_budget.post, {
    target: 0.8,
    allowedMachineCpuUs: 525,
    machineCpuUs: 900,
    serviceBeyondHttpUs: 240,
    postgresCpuUs: 100,
  });
  assert.deepEqual(json.cpu_budget.floor, { machineCpuUs: 150, serviceCpuUs: 60, clientCpuUs: 40 });
  assert.ok(
    lines.some((l) => l.includes("GET: pgbench 400 µs per transaction") && l.includes("1x allows 400 µs")),
  );
  assert.ok(lines.some((l) => l.includes("HTTP alone") && l.includes("150 µs per request")));
});

Deno.test("the log-off service is a labelled line beside the default one, never the headline", () => {
  const { lines, json } = verdict(figures([round(1000, 4000), round(1000, 4000), round(1000, 4000)]));
  assert.equal(json.get.ratio, 0.25);
  assert.equal(json.log_off.get.ratio, 0.28);
  assert.ok(
    lines.some((l) => l.startsWith("beside it, labelled: request log off") && l.includes("GET ratio 0.28")),
  );
  assert.ok(lines.some((l) => l.startsWith("GET /kv") && l.includes("ratio 0.25")));
});

Deno.test("the batch line is the median of the measured runs' batch figures", () => {
  const rounds = [
    round(1000, 4000, { getBatches: batches(8, 5), postBatches: batches(4, 7) }),
    round(1000, 4000, { getBatches: batches(10, 6) }),
    round(1000, 4000, { getBatches: batches(12, 9), postBatches: batches(6, 9) }),
  ];
  const { lines, json } = verdict(figures(rounds));
  assert.equal(json.get_batches.sizeP50, 10);
  assert.equal(json.get_batches.dbMsP50, 6);
  assert.equal(json.post_batches.sizeP50, 5);
  assert.ok(lines.some((l) => l.includes("GET batches") && l.includes("median of 3 runs")));
  assert.ok(lines.some((l) => l.includes("POST batches") && l.includes("median of 2 runs")));
});

Deno.test("a ledger line counts for the one run its window meets, and not when it meets two", () => {
  const at = (ms: number, n: number, count = 100) =>
    JSON.stringify({
      time: new Date(ms).toISOString(),
      level: "info",
      message: "ledger",
      ...batches(n, 1),
      batches: count,
    });
  const t0 = Date.parse("2026-11-25T00:00:00Z");
  const windows = [
    { round: 1, method: "GET" as const, start: t0, end: t0 + 8_000 },
    { round: 1, method: "POST" as const, start: t0 + 20_000, end: t0 + 28_000 },
    { round: 2, method: "GET" as const, start: t0 + 33_000, end: t0 + 41_000 },
  ];
  const text = [
    '{"message":"request"}',
    at(t0 + 5_000, 3, 60), // meets the first run only, with fewer batches than the next line
    at(t0 + 12_000, 4), // meets the first run only (its window starts 2 s after the run began)
    at(t0 + 35_000, 5), // meets the POST run and the second GET run: counted for neither
    at(t0 + 45_000, 6), // meets the second GET run only
  ].join("\n");
  const found = batchesOfRuns(text, windows);
  assert.deepEqual(found.map((b) => b?.sizeP50), [4, undefined, 6]);
});

Deno.test("the CPU readers count up: the machine's busy time within all of it, the reaped children's time", async () => {
  const before = machineCpuSeconds();
  assert.ok(before.busy > 0 && before.busy < before.all);
  const reaped = reapedChildrenCpuSeconds();
  // A child that burns CPU, waited for: its time is added to ours once it is reaped.
  // It burns 300 ms of CPU time, not of wall time: on a busy machine the two differ.
  const burn = "import process from 'node:process'; let x = 0; " +
    "while (process.cpuUsage().user + process.cpuUsage().system < 300_000) x++;";
  const child = await new Deno.Command(Deno.execPath(), { args: ["eval", burn] }).output();
  assert.ok(child.success);
  assert.ok(reapedChildrenCpuSeconds() - reaped >= 0.2, "the child's CPU time is counted");
  const after = machineCpuSeconds();
  assert.ok(after.busy - before.busy >= 0.2 && after.all > before.all);
});

Deno.test("against a baseline commit the cost is one minus the median of the per-round POST ratios", () => {
  // POST runs at half the GET rate given: 800 req/s here.
  const rounds = [0.9, 0.8, 0.95].map((share) =>
    round(1600, 1000, { baselineGet: run(1600, 500), baselinePost: run(800 / share, 500) })
  );
  const { lines, json } = verdict(figures(rounds));
  assert.deepEqual(json.versus_baseline.postRounds, [0.9, 0.8, 0.95]);
  assert.equal(json.versus_baseline.post, 0.9);
  assert.equal(json.versus_baseline.postCost, 0.1);
  assert.ok(lines.some((l) => /POST costs 10% \(issue 23's encryption target: at most 10%, met\)/.test(l)));
  const worse = verdict(figures(rounds.map((r) => ({ ...r, baselinePost: run(1000, 500) }))));
  assert.equal(worse.json.versus_baseline.postCost, 0.2);
  assert.ok(worse.lines.some((l) => /POST costs 20% .*missed\)/.test(l)));
});

Deno.test("the erase line holds the wall time against the 5 s target and what the erasure left", () => {
  const run = {
    events: 100_000,
    kvEntries: 24_999,
    callLogs: 74_999,
    seconds: 4.2,
    taskSeconds: 3.9,
    rowsLeft: 0,
    eventsKept: 100_001,
    otherRowsKept: true,
    auditClean: true,
  };
  const lines = summarize({ machine: "m", seconds: 10, rounds: 3, wallets: 10, profile: false, erase: run });
  const json = JSON.parse(lines.at(-1)!);
  assert.ok(lines.some((l) => /100,000 events .* in 4\.20 s .*target < 5 s met/.test(l)), lines.join("\n"));
  assert.deepEqual([json.erase.seconds, json.erase.target], [4.2, 5]);
  const slow = summarize({
    machine: "m",
    seconds: 10,
    rounds: 3,
    wallets: 10,
    profile: false,
    erase: { ...run, seconds: 5 },
  });
  assert.ok(slow.some((l) => /target < 5 s missed/.test(l)));
});
