// Given events / when a run is refused for want of credits / then what the scheduler decides
// (issue 21), without a database: each refusal is free and records `failure` / `Insufficient
// credits`, and counts as a failed run of the webhook's health, so the refusal that reaches
// WEBHOOK_PAUSE_AFTER_FAILURES turns the schedule inactive with the pause's alert; a success ends
// the streak; refusals written before issue 21 (no status) never count, so a replay of an old log
// folds what the live model holds.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { decideBilled, NOW, WALLET } from "./helpers/decider.ts";
import { fireRunCommand } from "../src/schedules/commands.ts";
import type { ScheduleClaim } from "../src/schedules/claims.ts";
import type { ScheduleRow } from "../projections/schedules.ts";
import { evolveHealth, healthyRow } from "../projections/webhook_health.ts";
import type { AlertIds } from "../src/webhooks/endpoint_health.ts";
import { created, opened, scheduledData } from "./helpers/webhook_spec.ts";

const RULES = { pauseAfterFailures: 4, pauseAfterMs: 24 * 3600_000 };
const ALERT_IDS: AlertIds = { deliveryIds: ["dlv_a1", "dlv_a2"], messageIds: ["msg_a1", "msg_a2"] };
const MINUTE = 60_000;
const EVERY_MINUTE = { cron: "* * * * *", timezone: "UTC", active: true };
const withAlerts = newEvent("LowBalanceSettingsChanged", {
  threshold: 0,
  webhook: { url: "https://alerts.example/", headers: {}, options: {} },
  secret: "whsec_alerts",
});
// A wallet left with 1 credit: a run costs 2.
const given = [...opened(1), withAlerts, created(scheduledData("job", { schedule: EVERY_MINUTE }))];

/** `count` runs refused before the one at `planned`, a minute apart, as written now or before issue 21. */
function refusals(count: number, planned: Date, written: "now" | "before issue 21" = "now"): NewEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const at = new Date(planned.getTime() - (count - i) * MINUTE);
    return newEvent("ScheduleRunFailed", {
      webhookId: "job",
      plannedAt: at.toISOString(),
      executedAt: at.toISOString(),
      error: "Insufficient credits",
      nextRunAt: new Date(at.getTime() + MINUTE).toISOString(),
      ...(written === "now" ? { status: 402 } : {}),
    });
  });
}

/** The run planned at `planned`, decided after `before` as the ledger would. */
function refuse(before: NewEvent[], planned = new Date("2027-03-01T12:00:00.000Z")) {
  const claim: ScheduleClaim = { walletId: WALLET, webhookId: "job", plannedAt: planned, token: "t1" };
  const schedule: ScheduleRow = {
    wallet_id: WALLET,
    webhook_id: "job",
    cron: EVERY_MINUTE.cron,
    timezone: "UTC",
    active: true,
    next_run_at: planned,
    handled_through: null,
    last_run_at: null,
    last_status: null,
    last_error: null,
    last_delivery_id: null,
  };
  const command = fireRunCommand(claim, "dlv_run", { rules: RULES, alertIds: ALERT_IDS });
  return decideBilled(before, command, { overrides: { claim: true, schedule }, now: planned }).call();
}

const types = (events?: NewEvent[]) => events?.map((e) => e.type) ?? [];
const planned = new Date("2027-03-01T12:00:00.000Z");

Deno.test("a refused run is free, records Insufficient credits with its status, and keeps the schedule", () => {
  const call = refuse(given, planned);
  assert.deepEqual([call.outcome, call.log, call.charge ?? 0], [
    "refused",
    { status: 402, error: "Insufficient credits" },
    0,
  ]);
  assert.deepEqual(types(call.events), ["ScheduleRunFailed"]);
  assert.deepEqual(call.events![0].data, {
    webhookId: "job",
    plannedAt: planned.toISOString(),
    executedAt: planned.toISOString(),
    error: "Insufficient credits",
    nextRunAt: "2027-03-01T12:01:00.000Z",
    status: 402,
  });
  assert.deepEqual(call.effects?.map((e) => e.type), ["endScheduleClaim"]);
});

Deno.test("the refusal that reaches the bound turns the schedule inactive, paused with its alert", () => {
  const call = refuse([...given, ...refusals(RULES.pauseAfterFailures - 1, planned)], planned);
  assert.deepEqual(types(call.events), ["ScheduleRunFailed", "WebhookUpdated", "WebhookPaused"]);
  const [, updated, paused] = call.events as any[];
  assert.deepEqual(updated.data.schedule, { ...EVERY_MINUTE, active: false });
  assert.deepEqual(
    [paused.data.reason, paused.data.failures, paused.data.lastStatus, paused.data.lastError],
    ["runs not paid", RULES.pauseAfterFailures, 402, "Insufficient credits"],
  );
  assert.deepEqual(call.effects?.map((e) => e.type), ["endScheduleClaim", "queueDelivery"]);
  const alert = (call.effects![1] as any).delivery;
  assert.deepEqual([alert.kind, alert.cost, alert.payload.type, alert.payload.webhookId], [
    "alert_webhook",
    0,
    "webhook.paused",
    "job",
  ]);
  assert.match(alert.payload.subject, /its runs cannot be paid/);
  assert.equal(call.charge ?? 0, 0, "the pause, like the refusal, is free");
});

Deno.test("a delivered run ends the streak: the count starts again from it", () => {
  const n = RULES.pauseAfterFailures;
  const delivered = newEvent("DeliveryAttempted", {
    attemptId: "a1",
    deliveryId: "dlv_ok",
    webhookId: "job",
    kind: "scheduled",
    messageId: "sch_job_1",
    attempt: 1,
    ok: true,
    status: 200,
    latencyMs: 5,
    cost: 2,
    balance: 1,
  });
  const earlier = refusals(n - 1, new Date(planned.getTime() - n * MINUTE));
  // n - 1 refusals, a delivered run, n - 2 refusals: the next one is the (n - 1)th of its streak.
  const short = [...given, ...earlier, delivered, ...refusals(n - 2, planned)];
  assert.deepEqual(types(refuse(short, planned).events), ["ScheduleRunFailed"]);
  // One more refusal before it, and it is the nth: the schedule turns inactive, counting n.
  const full = [...given, ...earlier, delivered, ...refusals(n - 1, planned)];
  const paused = refuse(full, planned).events!.find((e) => e.type === "WebhookPaused");
  assert.equal((paused?.data as { failures?: number } | undefined)?.failures, n);
});

Deno.test("refusals written before issue 21 carry no status and never count", () => {
  const old = refusals(RULES.pauseAfterFailures + 2, planned, "before issue 21");
  assert.deepEqual(types(refuse([...given, ...old], planned).events), ["ScheduleRunFailed"]);
  // The health fold leaves an old refusal alone, and counts a new one.
  const [oldOne] = refusals(1, planned, "before issue 21");
  const [newOne] = refusals(1, planned);
  const stored = (event: NewEvent) =>
    ({ ...event, walletId: WALLET, version: 1, position: 1, recordedAt: NOW }) as any;
  const row = healthyRow(WALLET, "job");
  assert.equal(evolveHealth(row, stored(oldOne)), row);
  assert.deepEqual(evolveHealth(row, stored(newOne)), {
    ...row,
    failures: 1,
    failing_since: new Date((newOne.data as { executedAt: string }).executedAt),
    last_status: 402,
    last_error: "Insufficient credits",
  });
});
