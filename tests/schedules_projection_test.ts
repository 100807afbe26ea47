// The schedule read model as a pure fold: given events, then the row (no database).
import assert from "node:assert/strict";
import { type NewEvent, newEvent, type StoredEvent } from "../events/catalogue.ts";
import { foldSchedules, runMessageId, type ScheduleRow } from "../projections/schedules.ts";
import type { WebhookConfigData } from "../projections/webhook_config_data.ts";
import { isMissed, nextAfterRun, planAfterMiss } from "../src/schedules/plan.ts";

const WALLET = "a".repeat(64);

function config(schedule?: WebhookConfigData["schedule"]): WebhookConfigData {
  return {
    webhookId: "job",
    url: "https://hooks.example.com/job",
    headers: {},
    ...(schedule ? { schedule } : { options: {}, includeAttachments: true }),
    secret: "whsec_x",
    createdAt: "2027-01-01T00:00:00.000Z",
  };
}

/** Events recorded at the given instants, numbered as one wallet's stream. */
function stream(...steps: [string, NewEvent][]): StoredEvent[] {
  return steps.map(([at, event], i) => ({
    ...event,
    walletId: WALLET,
    version: i + 1,
    position: i + 1,
    recordedAt: new Date(at),
  } as StoredEvent));
}

function rowAfter(...steps: [string, NewEvent][]): ScheduleRow | undefined {
  return foldSchedules(stream(...steps)).get("job");
}

const daily = { cron: "0 9 * * *", timezone: "UTC", active: true };
const fired = (planned: string, executed: string, next: string, deliveryId = "dlv_1") =>
  newEvent("ScheduleFired", {
    webhookId: "job",
    plannedAt: planned,
    executedAt: executed,
    deliveryId,
    nextRunAt: next,
  });
const attempt = (deliveryId: string, ok: boolean) =>
  newEvent("DeliveryAttempted", {
    attemptId: `att_${deliveryId}`,
    deliveryId,
    webhookId: "job",
    kind: "scheduled",
    messageId: "sch_job_1",
    attempt: 1,
    ok,
    ...(ok ? { status: 200 } : { status: 500, error: "HTTP 500 Internal Server Error" }),
    latencyMs: 3,
    cost: 2,
    balance: 90,
  });

Deno.test("a new schedule is planned from the time of its event", () => {
  const row = rowAfter(["2027-01-01T10:00:00Z", newEvent("WebhookCreated", config(daily))]);
  assert.equal(row?.next_run_at?.toISOString(), "2027-01-02T09:00:00.000Z");
  assert.deepEqual([row?.last_run_at, row?.last_status, row?.last_error], [null, null, null]);
});

Deno.test("a run moves the plan on; its delivery's attempt gives the status", () => {
  const events: [string, NewEvent][] = [
    ["2027-01-01T08:00:00Z", newEvent("WebhookCreated", config(daily))],
    [
      "2027-01-01T09:00:00.3Z",
      fired("2027-01-01T09:00:00.000Z", "2027-01-01T09:00:00.300Z", "2027-01-02T09:00:00.000Z"),
    ],
  ];
  const pending = rowAfter(...events)!;
  assert.deepEqual(
    [pending.next_run_at?.toISOString(), pending.last_run_at?.toISOString(), pending.last_status],
    ["2027-01-02T09:00:00.000Z", "2027-01-01T09:00:00.300Z", null],
  );
  const failed = rowAfter(...events, ["2027-01-01T09:00:01Z", attempt("dlv_1", false)])!;
  assert.deepEqual([failed.last_status, failed.last_error], ["failure", "HTTP 500 Internal Server Error"]);
  // An attempt of an earlier run's delivery does not speak for the last run.
  const stale = rowAfter(...events, ["2027-01-01T09:00:01Z", attempt("dlv_0", true)])!;
  assert.equal(stale.last_status, null);
});

Deno.test("an edit keeps the planned run; a changed, paused or resumed plan is planned again", () => {
  const created: [string, NewEvent] = ["2027-01-01T08:00:00Z", newEvent("WebhookCreated", config(daily))];
  const urlOnly = rowAfter(created, ["2027-01-01T09:00:00.5Z", newEvent("WebhookUpdated", config(daily))])!;
  assert.equal(urlOnly.next_run_at?.toISOString(), "2027-01-01T09:00:00.000Z", "due run kept");
  const paused = rowAfter(created, [
    "2027-01-01T08:30:00Z",
    newEvent("WebhookUpdated", config({ ...daily, active: false })),
  ])!;
  assert.equal(paused.next_run_at, null);
  const resumed = rowAfter(
    created,
    ["2027-01-01T08:30:00Z", newEvent("WebhookUpdated", config({ ...daily, active: false }))],
    ["2027-01-03T12:00:00Z", newEvent("WebhookUpdated", config(daily))],
  )!;
  assert.equal(resumed.next_run_at?.toISOString(), "2027-01-04T09:00:00.000Z", "no replay of paused runs");
  const moved = rowAfter(created, [
    "2027-01-01T08:30:00Z",
    newEvent("WebhookUpdated", config({ ...daily, timezone: "Asia/Tokyo" })),
  ])!;
  assert.equal(moved.next_run_at?.toISOString(), "2027-01-02T00:00:00.000Z");
});

Deno.test("a planned time dealt with is never planned again, whatever the clocks say", () => {
  // A run of 09:00 by one instance, then a replan by an instance whose clock is 5 s behind.
  const row = rowAfter(
    ["2027-01-01T08:00:00Z", newEvent("WebhookCreated", config({ ...daily, cron: "0 9 * * *" }))],
    [
      "2027-01-01T09:00:00.3Z",
      fired("2027-01-01T09:00:00.000Z", "2027-01-01T09:00:00.300Z", "2027-01-02T09:00:00.000Z"),
    ],
    [
      "2027-01-01T08:59:55Z",
      newEvent("WebhookUpdated", config({ ...daily, cron: "0 9 * * *", timezone: "Etc/UTC" })),
    ],
  )!;
  assert.equal(row.next_run_at?.toISOString(), "2027-01-02T09:00:00.000Z");
});

Deno.test("mailbox mode and deletion end the schedule; a new schedule starts without history", () => {
  const ran: [string, NewEvent][] = [
    ["2027-01-01T08:00:00Z", newEvent("WebhookCreated", config(daily))],
    [
      "2027-01-01T09:00:00.3Z",
      fired("2027-01-01T09:00:00.000Z", "2027-01-01T09:00:00.300Z", "2027-01-02T09:00:00.000Z"),
    ],
  ];
  assert.equal(rowAfter(...ran, ["2027-01-01T10:00:00Z", newEvent("WebhookUpdated", config())]), undefined);
  assert.equal(
    rowAfter(...ran, ["2027-01-01T10:00:00Z", newEvent("WebhookDeleted", { webhookId: "job" })]),
    undefined,
  );
  const again = rowAfter(
    ...ran,
    ["2027-01-01T10:00:00Z", newEvent("WebhookUpdated", config())],
    ["2027-01-01T11:00:00Z", newEvent("WebhookUpdated", config(daily))],
  )!;
  assert.deepEqual([again.next_run_at?.toISOString(), again.last_run_at], ["2027-01-02T09:00:00.000Z", null]);
  const gone = rowAfter(...ran, [
    "2027-01-01T10:00:00Z",
    newEvent("WalletDeactivated", { lastUsedAt: "2025-01-01T00:00:00Z" }),
  ]);
  assert.equal(gone, undefined);
});

Deno.test("a refused run and skipped runs are failures; a skip keeps lastRunAt", () => {
  const refused = rowAfter(
    ["2027-01-01T08:00:00Z", newEvent("WebhookCreated", config(daily))],
    [
      "2027-01-01T09:00:00.2Z",
      newEvent("ScheduleRunFailed", {
        webhookId: "job",
        plannedAt: "2027-01-01T09:00:00.000Z",
        executedAt: "2027-01-01T09:00:00.200Z",
        error: "Insufficient credits",
        nextRunAt: "2027-01-02T09:00:00.000Z",
      }),
    ],
  )!;
  assert.deepEqual(
    [
      refused.last_status,
      refused.last_error,
      refused.last_run_at?.toISOString(),
      refused.next_run_at?.toISOString(),
    ],
    ["failure", "Insufficient credits", "2027-01-01T09:00:00.200Z", "2027-01-02T09:00:00.000Z"],
  );
  const skipped = rowAfter(
    ["2027-01-01T08:00:00Z", newEvent("WebhookCreated", config(daily))],
    [
      "2027-01-03T12:00:00Z",
      newEvent("ScheduleRunsSkipped", {
        webhookId: "job",
        firstPlannedAt: "2027-01-01T09:00:00.000Z",
        missedBefore: "2027-01-03T11:55:00.000Z",
        error: "Skipped",
        nextRunAt: "2027-01-04T09:00:00.000Z",
      }),
    ],
  )!;
  assert.deepEqual(
    [skipped.last_status, skipped.last_run_at, skipped.handled_through?.toISOString()],
    ["failure", null, "2027-01-03T11:54:59.999Z"],
  );
});

Deno.test("the grace period: 5 minutes late still runs, later is skipped, and planning resumes within it", () => {
  const planned = new Date("2027-01-01T09:00:00Z");
  assert.equal(isMissed(planned, new Date("2027-01-01T09:05:00.000Z")), false);
  assert.equal(isMissed(planned, new Date("2027-01-01T09:05:00.001Z")), true);
  const minutely = { cron: "* * * * *", timezone: "UTC" };
  const plan = planAfterMiss(minutely, new Date("2027-01-01T09:08:00.000Z"));
  assert.deepEqual(
    [plan.missedBefore.toISOString(), plan.nextRunAt?.toISOString()],
    ["2027-01-01T09:03:00.000Z", "2027-01-01T09:03:00.000Z"],
  );
  assert.equal(nextAfterRun(minutely, planned)?.toISOString(), "2027-01-01T09:01:00.000Z");
  assert.equal(runMessageId("job", planned), `sch_job_${planned.getTime() / 1000}`);
});
