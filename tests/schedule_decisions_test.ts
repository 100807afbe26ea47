// Given events / when the scheduler handles a claimed planned time / then its decision: a run, a
// refusal on an empty wallet, a skip after downtime, or no call at all when the claim went stale.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { decideBilled, decideUnbilled, WALLET } from "./helpers/decider.ts";
import { fireRunCommand, skipMissedRunsCommand } from "../src/schedules/commands.ts";
import type { ScheduleClaim } from "../src/schedules/claims.ts";

const created = (active = true) =>
  newEvent("WebhookCreated", {
    webhookId: "job",
    url: "https://hooks.example/job",
    headers: {},
    schedule: { cron: "0 9 * * *", timezone: "UTC", active },
    secret: "whsec_x",
    createdAt: "2027-02-27T00:00:00.000Z",
  });
const opened = (credits: number, ...more: NewEvent[]): NewEvent[] => [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: credits, balance: credits, reason: "welcome" }),
  ...more,
];
// The decider's events are recorded just before 2027-03-01 12:00: the first 09:00 after is March 2.
const planned = new Date("2027-03-02T09:00:00.000Z");
const claim: ScheduleClaim = { walletId: WALLET, webhookId: "job", plannedAt: planned, token: "t1" };
const at = new Date("2027-03-02T09:00:01.000Z");

Deno.test("a due run with credits: 2 charged, ScheduleFired with the next plan, POST queued, claim ended", () => {
  const call = decideBilled(opened(10, created()), fireRunCommand(claim, "dlv_1"), {
    overrides: { claim: true },
    now: at,
  }).call();
  assert.deepEqual([call.outcome, call.log, call.charge], ["fired", { status: 200 }, undefined]);
  assert.deepEqual(call.events, [newEvent("ScheduleFired", {
    webhookId: "job",
    plannedAt: planned.toISOString(),
    executedAt: at.toISOString(),
    nextRunAt: "2027-03-03T09:00:00.000Z",
    deliveryId: "dlv_1",
  })]);
  assert.deepEqual(call.effects?.map((e) => e.type), ["queueDelivery", "endScheduleClaim"]);
  const delivery = (call.effects![0] as any).delivery;
  assert.deepEqual([delivery.kind, delivery.messageId, delivery.cost], [
    "scheduled",
    `sch_job_${planned.getTime() / 1000}`,
    2,
  ]);
});

Deno.test("an empty wallet: refused, free, ScheduleRunFailed, nothing queued, the schedule kept", () => {
  const call = decideBilled(opened(1, created()), fireRunCommand(claim, "dlv_1"), {
    overrides: { claim: true },
    now: at,
  }).call();
  assert.deepEqual([call.outcome, call.log.error, call.charge ?? 0], ["refused", "Insufficient credits", 0]);
  assert.deepEqual(call.events?.map((e) => e.type), ["ScheduleRunFailed"]);
  assert.deepEqual(call.effects?.map((e) => e.type), ["endScheduleClaim"]);
});

Deno.test("a stale claim is no call: taken over, paused, moved on or deleted", () => {
  const stale: [string, NewEvent[], boolean][] = [
    ["taken over", opened(10, created()), false],
    ["paused", opened(10, created(false)), true],
    ["deleted", opened(10, created(), newEvent("WebhookDeleted", { webhookId: "job" })), true],
  ];
  for (const [why, given, held] of stale) {
    const when = decideBilled(given, fireRunCommand(claim, "dlv_1"), {
      overrides: { claim: held ? true : undefined },
      now: at,
    });
    assert.deepEqual([when.decision.outcome, when.decision.log], ["lost", undefined], why);
  }
  const later = { ...claim, plannedAt: new Date("2027-03-03T09:00:00.000Z") };
  const moved = decideBilled(opened(10, created()), fireRunCommand(later, "dlv_1"), {
    overrides: { claim: true },
  });
  assert.equal(moved.decision.outcome, "lost", "not the planned time the schedule waits for");
});

Deno.test("runs missed by more than 5 minutes are skipped, free, and the plan resumes", () => {
  const late = new Date("2027-03-04T10:00:00.000Z");
  const skipped = decideUnbilled(opened(10, created()), skipMissedRunsCommand(claim), {
    overrides: { claim: true },
    now: late,
  });
  assert.equal(skipped.outcome, "skipped");
  const event = skipped.events![0] as Extract<NewEvent, { type: "ScheduleRunsSkipped" }>;
  assert.deepEqual([event.data.firstPlannedAt, event.data.nextRunAt], [
    planned.toISOString(),
    "2027-03-05T09:00:00.000Z",
  ]);
  assert.deepEqual(skipped.effects?.map((e) => e.type), ["endScheduleClaim"]);
  assert.equal(
    decideUnbilled(opened(10, created()), skipMissedRunsCommand(claim), {
      overrides: { claim: undefined },
      now: late,
    })
      .outcome,
    "lost",
  );
});
