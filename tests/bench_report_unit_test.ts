// The bench's verdict from given runs: the paired ratios, the CPU budget the targets leave per
// call, and the CPU readers it is built on.
import assert from "node:assert/strict";
import { summarize } from "../src/tasks/bench/report.ts";
import type { RunResult } from "../src/tasks/bench/load.ts";
import type { LoadFigures, Round } from "../src/tasks/bench/service_load.ts";
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

function round(getRate: number, ceilingRate: number): Round {
  const service = { p50Ms: 20, p99Ms: 60, serviceCpuUs: 300 };
  return {
    get: run(getRate, 700, service),
    getCeiling: run(ceilingRate, 400),
    post: run(getRate / 2, 900, service),
    postCeiling: run(ceilingRate, 420),
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
  assert.deepEqual(json.cpu_budget.get, { target: 2, allowedMachineCpuUs: 200, machineCpuUs: 700 });
  assert.deepEqual(json.cpu_budget.post, { target: 1.5, allowedMachineCpuUs: 280, machineCpuUs: 900 });
  assert.deepEqual(json.cpu_budget.floor, { machineCpuUs: 150, serviceCpuUs: 60, clientCpuUs: 40 });
  assert.ok(
    lines.some((l) => l.includes("GET: pgbench 400 µs per transaction") && l.includes("2x allows 200 µs")),
  );
  assert.ok(lines.some((l) => l.includes("HTTP alone") && l.includes("150 µs per request")));
});

Deno.test("the CPU readers count up: the machine's busy time within all of it, the reaped children's time", async () => {
  const before = machineCpuSeconds();
  assert.ok(before.busy > 0 && before.busy < before.all);
  const reaped = reapedChildrenCpuSeconds();
  // A child that burns CPU, waited for: its time is added to ours once it is reaped.
  const burn = "let x = 0; const end = performance.now() + 300; while (performance.now() < end) x++;";
  const child = await new Deno.Command(Deno.execPath(), { args: ["eval", burn] }).output();
  assert.ok(child.success);
  assert.ok(reapedChildrenCpuSeconds() - reaped >= 0.2, "the child's CPU time is counted");
  const after = machineCpuSeconds();
  assert.ok(after.busy - before.busy >= 0.2 && after.all > before.all);
});
