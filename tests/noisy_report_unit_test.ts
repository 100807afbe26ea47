// The noisy-neighbour task's pure parts from given figures: latency summaries, the mail figures
// (a mail never accepted or never delivered counts with its wait), each attack window's verdicts
// against issue 21's targets, the attacker's tally, the permanent-log budget's arithmetic, the
// task's settings, and the messages it sends.
import assert from "node:assert/strict";
import {
  attackChecks,
  controlReference,
  controlWarnings,
  kvFigures,
  latencySummary,
  mailFigures,
  type MailRecord,
  type PhaseFigures,
  ratio,
} from "../src/tasks/noisy_neighbour/report.ts";
import { countAnswer, mergeTally, newTally } from "../src/tasks/noisy_neighbour/tally.ts";
import {
  budgetFigures,
  type BudgetProbe,
  type FreeProbe,
} from "../src/tasks/noisy_neighbour/budget_figures.ts";
import { ATTACKS, noisySettings } from "../src/tasks/noisy_neighbour/settings.ts";
import { bombHtml } from "../src/tasks/noisy_neighbour/attacks/parse_bomb.ts";
import { dataBytes } from "../src/tasks/noisy_neighbour/smtp_client.ts";

function mail(overrides: Partial<PhaseFigures["mail"]> = {}): PhaseFigures["mail"] {
  return {
    sent: 20,
    accepted: 20,
    notAccepted: 0,
    refusals: 0,
    acceptP50Ms: 150,
    acceptMaxMs: 300,
    delivered: 20,
    undelivered: 0,
    deliveryP50Ms: 20,
    deliveryMaxMs: 60,
    ...overrides,
  };
}

function window(name: string, overrides: Partial<PhaseFigures> = {}): PhaseFigures {
  return {
    name,
    kv: kvFigures(Array.from({ length: 1000 }, (_, i) => (i < 985 ? 5 : 20)), 0, 10),
    mail: mail(),
    eventsTableBytes: 0,
    eventsRowBytes: 0,
    peakRssMb: 200,
    cpuSeconds: { service: 1, postgres: 1, task: 1, others: 0 },
    ...overrides,
  };
}

function attackWindow(kv: { perSecond: number; p99Ms: number }, overrides: Partial<PhaseFigures> = {}) {
  const base = window("poison-input", overrides);
  return {
    ...base,
    kv: { ...base.kv, ...kv },
    attack: {
      requests: 100,
      statuses: { "400": 100 },
      unbilled5xx: 0,
      slowed5xx: 0,
      creditsSpent: 100,
      attackerEventBytes: 1000,
      notes: [],
      ...overrides.attack,
    },
  };
}

const failed = (checks: { target: string; pass: boolean }[]) =>
  checks.filter((c) => !c.pass).map((c) => c.target);

Deno.test("latencies: nearest-rank percentiles of the calls, throughput per second of the window", () => {
  const summary = latencySummary([5, 1, 4, 2, 3, 100, 6, 7, 8, 9]);
  assert.deepEqual(summary, { count: 10, p50Ms: 5, p99Ms: 100, maxMs: 100 });
  assert.deepEqual(latencySummary([]), { count: 0, p50Ms: null, p99Ms: null, maxMs: null });
  const kv = kvFigures([10, 20, 30, 40], 3, 2);
  assert.equal(kv.perSecond, 2, "only the 2xx calls count");
  assert.equal(kv.errors, 3);
  assert.equal(ratio(45, 50), 0.9);
  assert.equal(ratio(45, 0), null);
});

Deno.test("mail: a mail never accepted, or accepted and never delivered, counts with the time it waited", () => {
  const records: MailRecord[] = [
    { startedAt: 0, acceptedAt: 200, refusals: 0, deliveredAt: 210 },
    { startedAt: 100, acceptedAt: 400, refusals: 1, deliveredAt: null },
    { startedAt: 500, acceptedAt: null, refusals: 4, deliveredAt: null },
  ];
  const figures = mailFigures(records, 10_000);
  assert.equal(figures.sent, 3);
  assert.equal(figures.accepted, 2);
  assert.equal(figures.notAccepted, 1);
  assert.equal(figures.refusals, 5);
  assert.equal(figures.acceptMaxMs, 9500, "the one never accepted waited from 500 to 10000");
  assert.equal(figures.acceptP50Ms, 300);
  assert.equal(figures.delivered, 1);
  assert.equal(figures.undelivered, 1);
  assert.equal(figures.deliveryMaxMs, 9600, "the one never delivered waited from 400 to 10000");
});

Deno.test("an attack is compared with the mean of the victim alone before and after it", () => {
  const before = window("control 0");
  const after = window("control 1", { kv: { ...before.kv, perSecond: 50, p99Ms: 30 } });
  assert.deepEqual(controlReference(before, after), {
    from: ["control 0", "control 1"],
    perSecond: 75,
    p99Ms: 25,
  });
  assert.deepEqual(controlReference(before), { from: ["control 0"], perSecond: 100, p99Ms: 20 });
  const noP99 = window("control 1", { kv: { ...before.kv, p99Ms: null } });
  assert.equal(controlReference(before, noP99).p99Ms, null);
});

Deno.test("an attack window meets the targets only within every bound", () => {
  const control = controlReference(window("control 0"));
  const controlKv = { perSecond: control.perSecond, p99Ms: control.p99Ms! };
  assert.deepEqual(failed(attackChecks(attackWindow(controlKv), control)), []);
  // At the bounds exactly: 90% of the throughput, 1.5x the p99, 1000 ms, 2000 ms.
  const atBounds = attackWindow(
    { perSecond: control.perSecond * 0.9, p99Ms: control.p99Ms! * 1.5 },
    { mail: mail({ acceptMaxMs: 1000, deliveryMaxMs: 2000 }), peakRssMb: 499 },
  );
  assert.deepEqual(failed(attackChecks(atBounds, control)), []);
  const past = attackWindow(
    { perSecond: control.perSecond * 0.89, p99Ms: control.p99Ms! * 1.51 },
    { mail: mail({ acceptMaxMs: 1001, deliveryMaxMs: 2001 }), peakRssMb: 500 },
  );
  assert.deepEqual(failed(attackChecks(past, control)), [
    "victim KV throughput >= 90% of control",
    "victim KV p99 <= 1.5x control",
    "victim mail accepted within 1000 ms",
    "victim deliveries start within 2000 ms",
    "service RSS < 500 MB",
  ]);
  // 89.6% shows as 0.9 once rounded, and still fails.
  const justUnder = attackWindow({ perSecond: control.perSecond * 0.896, p99Ms: control.p99Ms! });
  assert.deepEqual(failed(attackChecks(justUnder, control)), ["victim KV throughput >= 90% of control"]);
});

Deno.test("a mail not accepted or not delivered fails its target whatever the maximum says", () => {
  const control = controlReference(window("control 0"));
  const kv = { perSecond: control.perSecond, p99Ms: control.p99Ms! };
  const lost = attackWindow(kv, {
    mail: mail({ accepted: 19, notAccepted: 1, acceptMaxMs: 10, delivered: 18, undelivered: 1 }),
  });
  assert.deepEqual(failed(attackChecks(lost, control)), [
    "victim mail accepted within 1000 ms",
    "victim deliveries start within 2000 ms",
  ]);
  const none = attackWindow(kv, {
    mail: mail({ sent: 0, accepted: 0, acceptMaxMs: null, delivered: 0, deliveryMaxMs: null }),
  });
  assert.equal(failed(attackChecks(none, control)).length, 2, "no mail at all proves nothing");
});

Deno.test("the attacker's unbilled 5xx and a key past its cap fail their targets", () => {
  const control = controlReference(window("control 0"));
  const kv = { perSecond: control.perSecond, p99Ms: control.p99Ms! };
  const free5xx = attackWindow(kv);
  free5xx.attack.unbilled5xx = 1;
  assert.deepEqual(failed(attackChecks(free5xx, control)), ["attacker gets no unbilled 5xx"]);
  const withinCap = attackWindow(kv, { attack: { key: { spent: 2, cap: 2 } } as PhaseFigures["attack"] });
  assert.deepEqual(failed(attackChecks(withinCap, control)), []);
  const pastCap = attackWindow(kv, { attack: { key: { spent: 3, cap: 2 } } as PhaseFigures["attack"] });
  assert.deepEqual(failed(attackChecks(pastCap, control)), ["the capped key spends no more than its cap"]);
});

Deno.test("a control window is not judged, but says when the victim alone already misses a bound", () => {
  assert.deepEqual(controlWarnings(window("control")), []);
  const busy = window("control", { mail: mail({ acceptMaxMs: 1500 }), peakRssMb: 900 });
  assert.deepEqual(controlWarnings(busy), [
    'the victim alone missed "victim mail accepted within 1000 ms" (max 1500 ms, 20 of 20 accepted)',
    "the service held 900 MB with the victim alone",
  ]);
});

Deno.test("tally: a 5xx is free when it carries no charge and no Retry-After; labels are never judged", () => {
  const tally = newTally();
  countAnswer(tally, { status: 500, cost: null, retryAfter: false });
  countAnswer(tally, { status: 500, cost: 0, retryAfter: false });
  countAnswer(tally, { status: 500, cost: 1, retryAfter: false });
  countAnswer(tally, { status: 503, cost: null, retryAfter: true });
  countAnswer(tally, { status: 400, cost: 1, retryAfter: false });
  countAnswer(tally, { status: "smtp 554", cost: null, retryAfter: false });
  countAnswer(tally, { status: "network", cost: null, retryAfter: false });
  assert.deepEqual(tally, {
    requests: 7,
    statuses: { "500": 3, "503": 1, "400": 1, "smtp 554": 1, network: 1 },
    unbilled5xx: 2,
    slowed5xx: 1,
  });
  const more = newTally();
  countAnswer(more, { status: 500, cost: null, retryAfter: false });
  assert.deepEqual(mergeTally(tally, more).statuses["500"], 4);
  assert.equal(tally.unbilled5xx, 3);
});

Deno.test("log budget: the worst paid call per credit, and each free limit's bytes a day", () => {
  const paid: BudgetProbe[] = [
    { name: "kv", status: 200, credits: 1, bytes: 4000 },
    { name: "webhook", status: 200, credits: 1, bytes: 90_000 },
    { name: "email", status: "smtp 250", credits: 5, bytes: 200_000 },
    { name: "refused", status: 402, credits: 0, bytes: 500 },
  ];
  const free: FreeProbe[] = [
    { name: "ledger", status: 200, credits: 0, bytes: 300, group: "views" },
    { name: "recharge", status: 200, credits: 0, bytes: 400, group: "other" },
    { name: "402", status: 402, credits: 0, bytes: 350, group: "other" },
  ];
  const bounded = budgetFigures(paid, free, {
    allowances: { views: 43_200, other: 1000 },
    sharedPerDay: null,
  });
  assert.equal(bounded.maxBytesPerCredit, 90_000);
  assert.equal(bounded.worstPaid, "webhook");
  assert.deepEqual(bounded.groups, [
    { group: "views", allowancePerDay: 43_200, maxBytesPerCall: 300, bytesPerDay: 12_960_000 },
    { group: "other", allowancePerDay: 1000, maxBytesPerCall: 400, bytesPerDay: 400_000 },
  ]);
  assert.equal(bounded.freeBytesPerDay, 13_360_000);
  const unlimited = budgetFigures(paid, free, {
    allowances: { views: 43_200, other: undefined },
    sharedPerDay: null,
  });
  assert.equal(unlimited.groups[1].bytesPerDay, null);
  assert.equal(unlimited.freeBytesPerDay, null, "a free path with bytes and no limit is unbounded");
  const writesNothing = budgetFigures(paid, free.map((p) => (p.group === "other" ? { ...p, bytes: 0 } : p)), {
    allowances: {
      views: 43_200,
      other: undefined,
    },
    sharedPerDay: null,
  });
  assert.equal(writesNothing.freeBytesPerDay, 12_960_000, "a free path that writes nothing needs no limit");
  const shared = budgetFigures(paid, free, { allowances: { views: 600, other: 600 }, sharedPerDay: 600 });
  assert.equal(
    shared.freeBytesPerDay,
    600 * 400,
    "one allowance shared by every group: its calls at the largest",
  );
  assert.equal(
    budgetFigures(paid, free, { allowances: { views: 43_200, other: undefined }, sharedPerDay: 600 })
      .freeBytesPerDay,
    240_000,
  );
});

Deno.test("settings: defaults, bounds, and NOISY_ONLY in the task's order", () => {
  assert.deepEqual(noisySettings({}), { seconds: 10, settleSeconds: 1, attacks: [...ATTACKS] });
  assert.deepEqual(noisySettings({ NOISY_SECONDS: "5", NOISY_ONLY: "idle-smtp, poison-input" }).attacks, [
    "poison-input",
    "idle-smtp",
  ]);
  assert.throws(
    () => noisySettings({ NOISY_SECONDS: "2" }),
    /Invalid NOISY_SECONDS "2": must be a whole number/,
  );
  assert.throws(() => noisySettings({ NOISY_SECONDS: "1.5" }), /Invalid NOISY_SECONDS/);
  assert.throws(() => noisySettings({ NOISY_ONLY: "poison-input,ddos" }), /Invalid NOISY_ONLY attack "ddos"/);
});

Deno.test("messages: the parse bomb nests 200,000 divs in SMTP-sized lines; DATA is dot-stuffed", () => {
  const html = bombHtml();
  const lines = html.split("\r\n");
  assert.ok(lines.every((line) => line.length <= 998), "no line over SMTP's limit");
  assert.equal(html.replaceAll("\r\n", ""), "<div>".repeat(200_000) + "</div>".repeat(200_000));
  assert.ok(html.length > 2_100_000 && html.length < 2_300_000, `about 2.2 MB: ${html.length}`);
  const data = new TextDecoder().decode(dataBytes("a\r\n.b\r\n..c"));
  assert.equal(data, "a\r\n..b\r\n...c\r\n.\r\n");
});
