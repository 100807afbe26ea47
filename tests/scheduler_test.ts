// The scheduler with a clock the test moves (CONTRACT section 10): runs at the planned instants in
// several zones and across DST transitions, the empty wallet, pause and resume, switching mode,
// deleting a webhook with a due run, and a restart across planned times. The whole service runs in
// the test process with its delivery worker and a local receiver; the scheduler is driven pass by
// pass (runDueSchedules), or started and stopped like an instance.
import assert from "node:assert/strict";
import { type InProcessService, inProcessService } from "./helpers/in_process.ts";
import { type ReceivedRequest, type Receiver, startReceiver } from "./helpers/receiver.ts";
import { sha256Hex } from "../src/ids.ts";
import { type DeliveryWorker, startDeliveryWorker } from "../src/webhooks/delivery_worker.ts";
import { deliveryChannels } from "../src/delivery_channels.ts";
import { adoptUnplannedSchedules } from "../src/tasks/adopt_schedules.ts";
import {
  handleClaim,
  type PassSummary,
  runDueSchedules,
  startScheduler,
} from "../src/schedules/scheduler.ts";
import { claimDueRuns } from "../src/schedules/claims.ts";
import { newEvent } from "../events/catalogue.ts";
import { auditLedger } from "../src/tasks/audit.ts";
import { replayProjections } from "../src/tasks/replay.ts";

interface Harness {
  svc: InProcessService;
  receiver: Receiver;
  worker: DeliveryWorker;
}

interface Wallet {
  token: string;
  hash: string;
  request(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; text: string; json(): any }>;
}

async function harness(): Promise<Harness> {
  const svc = await inProcessService({ UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" });
  const receiver = startReceiver();
  const worker = startDeliveryWorker({
    sql: svc.db.sql,
    ledger: svc.ledger,
    clock: svc.clock,
    channels: deliveryChannels({
      sql: svc.db.sql,
      signing: { serverSecret: "scheduler-test-secret-0123456789", publicUrl: "http://service" },
      allowPrivate: true,
    }),
    retryScale: 1,
  });
  return { svc, receiver, worker };
}

async function closeHarness(h: Harness) {
  await h.worker.stop();
  await h.receiver.close();
  await h.svc.close();
}

/** Moves the service's clock to `iso` (it keeps running from there). */
function setClock(h: Harness, iso: string) {
  h.svc.clock.advance(new Date(iso).getTime() - h.svc.clock.now().getTime());
}

function tick(h: Harness): Promise<PassSummary> {
  return runDueSchedules({ sql: h.svc.db.sql, ledger: h.svc.ledger, clock: h.svc.clock });
}

async function newWallet(h: Harness): Promise<Wallet> {
  const token = await h.svc.newToken();
  return {
    token,
    hash: await sha256Hex(token),
    async request(method, path, body) {
      const res = await h.svc.request(method, path, {
        token,
        ...(body === undefined
          ? {}
          : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
      });
      return { ...res, json: () => JSON.parse(res.text) };
    },
  };
}

async function createScheduled(
  h: Harness,
  wallet: Wallet,
  webhookId: string,
  cron: string,
  timezone: string,
): Promise<any> {
  const created = await wallet.request("POST", "/webhook", {
    webhookId,
    url: `${h.receiver.url}/${webhookId}`,
    schedule: { cron, timezone },
  });
  assert.equal(created.status, 200, created.text);
  return created.json();
}

/** The runs the receiver got for one webhook, by planned time (deliveries go out concurrently). */
function runsFor(h: Harness, webhookId: string): { request: ReceivedRequest; body: any }[] {
  return h.receiver.received
    .filter((request) => request.path === `/${webhookId}`)
    .map((request) => ({ request, body: JSON.parse(request.body) }))
    .sort((a, b) => a.body.scheduledFor.localeCompare(b.body.scheduledFor));
}

async function waitForRuns(h: Harness, webhookId: string, count: number, timeoutMs = 10_000) {
  const deadline = performance.now() + timeoutMs;
  while (runsFor(h, webhookId).length < count) {
    if (performance.now() > deadline) {
      throw new Error(`${webhookId}: ${runsFor(h, webhookId).length} of ${count} runs arrived`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return runsFor(h, webhookId);
}

/** The schedule row once the last run's delivery attempt has been recorded. */
async function settledSchedule(h: Harness, wallet: Wallet, webhookId: string, timeoutMs = 10_000) {
  const deadline = performance.now() + timeoutMs;
  while (true) {
    const [row] = await h.svc.db.sql`
      select * from schedules where wallet_id = ${wallet.hash} and webhook_id = ${webhookId}`;
    if (!row || row.last_status !== null || row.last_run_at === null) return row;
    if (performance.now() > deadline) throw new Error(`${webhookId}: the run's outcome was not recorded`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every queued delivery attempted and recorded (its outbox row then has nothing planned). */
async function outboxDrained(h: Harness, timeoutMs = 10_000) {
  const deadline = performance.now() + timeoutMs;
  while (true) {
    const [row] = await h.svc.db.sql`
      select count(*)::int as n from webhook_deliveries where next_attempt_at is not null or held`;
    if (row.n === 0) return;
    if (performance.now() > deadline) throw new Error(`${row.n} deliveries still queued`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function scheduleEvents(h: Harness, wallet: Wallet, webhookId: string) {
  const rows = await h.svc.db.sql<{ type: string; data: any }[]>`
    select type, data from events
    where wallet_id = ${wallet.hash} and type like 'Schedule%' and data->>'webhookId' = ${webhookId}
    order by version`;
  return rows.map((row) => ({ type: row.type, ...row.data }));
}

/** The debits of runs: the CallBilled entries the scheduler leaves in the call log. */
async function runLogs(h: Harness, wallet: Wallet) {
  const rows = await h.svc.db.sql<
    { path: string; status_code: number; cost: number; error: string | null }[]
  >`
    select path, status_code, cost, error from call_logs
    where wallet_id = ${wallet.hash} and method = 'CRON' order by version`;
  return rows.map((row) => ({ ...row }));
}

async function balanceOf(h: Harness, wallet: Wallet): Promise<number> {
  const [row] = await h.svc.db.sql<{ balance: number }[]>`
    select balance from wallets where wallet_id = ${wallet.hash}`;
  return row.balance;
}

const SECOND = 1000;

function plus(iso: string, ms: number): string {
  return new Date(new Date(iso).getTime() + ms).toISOString();
}

interface DstCase {
  name: string;
  cron: string;
  timezone: string;
  createAt: string;
  /** The instants the scheduler must fire at, in order. */
  runs: string[];
  /** Instants (wall-clock repeats) at which nothing may fire. */
  quiet?: string[];
  /** nextRunAt after the last run. */
  next: string;
}

const DST_CASES: DstCase[] = [
  {
    name: "America/New_York spring forward: a daily 02:30 runs at 03:00 EDT",
    cron: "30 2 * * *",
    timezone: "America/New_York",
    createAt: "2026-03-08T06:50:00.000Z",
    runs: ["2026-03-08T07:00:00.000Z"],
    next: "2026-03-09T06:30:00.000Z",
  },
  {
    name: "America/New_York fall back: a daily 01:30 runs once, at the first 01:30",
    cron: "30 1 * * *",
    timezone: "America/New_York",
    createAt: "2026-11-01T05:20:00.000Z",
    runs: ["2026-11-01T05:30:00.000Z"],
    quiet: ["2026-11-01T06:30:00.500Z"],
    next: "2026-11-02T06:30:00.000Z",
  },
  {
    name: "Europe/Rome spring forward: a daily 02:30 runs at 03:00 CEST",
    cron: "30 2 * * *",
    timezone: "Europe/Rome",
    createAt: "2026-03-29T00:50:00.000Z",
    runs: ["2026-03-29T01:00:00.000Z"],
    next: "2026-03-30T00:30:00.000Z",
  },
  {
    name: "Europe/Rome fall back: a daily 02:30 runs once, at the first 02:30",
    cron: "30 2 * * *",
    timezone: "Europe/Rome",
    createAt: "2026-10-25T00:20:00.000Z",
    runs: ["2026-10-25T00:30:00.000Z"],
    quiet: ["2026-10-25T01:30:00.500Z"],
    next: "2026-10-26T01:30:00.000Z",
  },
  {
    name: "Australia/Lord_Howe 30-minute spring forward: 02:15 runs at 02:30",
    cron: "15 2 * * *",
    timezone: "Australia/Lord_Howe",
    createAt: "2026-10-03T15:00:00.000Z",
    runs: ["2026-10-03T15:30:00.000Z"],
    next: "2026-10-04T15:15:00.000Z",
  },
  {
    name: "America/New_York fall back: an hourly job runs at both 01:00",
    cron: "0 * * * *",
    timezone: "America/New_York",
    createAt: "2026-11-01T04:50:00.000Z",
    runs: ["2026-11-01T05:00:00.000Z", "2026-11-01T06:00:00.000Z"],
    next: "2026-11-01T07:00:00.000Z",
  },
];

Deno.test({
  name: "scheduler: runs at the planned instants across zones and DST transitions",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const h = await harness();
    try {
      for (const [index, c] of DST_CASES.entries()) {
        await t.step(c.name, async () => {
          setClock(h, c.createAt);
          const wallet = await newWallet(h);
          const webhookId = `dst${index}`;
          const created = await createScheduled(h, wallet, webhookId, c.cron, c.timezone);
          assert.equal(created.schedule.nextRunAt, c.runs[0]);

          for (const [n, run] of c.runs.entries()) {
            setClock(h, plus(run, -SECOND));
            await tick(h);
            assert.equal(
              (await scheduleEvents(h, wallet, webhookId)).length,
              n,
              "nothing before the planned time",
            );
            setClock(h, plus(run, 300));
            await tick(h);
            const fired = await scheduleEvents(h, wallet, webhookId);
            assert.equal(fired.length, n + 1);
            assert.deepEqual([fired[n].type, fired[n].plannedAt], ["ScheduleFired", run]);
            const [delivered] = (await waitForRuns(h, webhookId, n + 1)).slice(n);
            assert.equal(delivered.body.scheduledFor, run);
            const drift = Date.parse(delivered.body.executedAt) - Date.parse(run);
            assert.ok(drift >= 0 && drift < 2 * SECOND, `started ${drift} ms after the planned time`);
            // Recording the attempt writes the schedule row, which a claim skips (SKIP LOCKED) while
            // it is in flight; a running scheduler takes it on its next pass, this test waits.
            await settledSchedule(h, wallet, webhookId);
          }
          for (const quiet of c.quiet ?? []) {
            setClock(h, quiet);
            await tick(h);
            assert.equal(
              (await scheduleEvents(h, wallet, webhookId)).length,
              c.runs.length,
              `nothing at ${quiet}`,
            );
          }

          const view = (await wallet.request("GET", `/webhook/${webhookId}`)).json().schedule;
          await settledSchedule(h, wallet, webhookId);
          const settled = (await wallet.request("GET", `/webhook/${webhookId}`)).json().schedule;
          assert.equal(view.nextRunAt, c.next);
          assert.deepEqual(
            [settled.nextRunAt, settled.lastStatus, settled.lastError],
            [c.next, "success", null],
          );
          const lastRun = runsFor(h, webhookId).at(-1)!.body;
          assert.equal(settled.lastRunAt, lastRun.executedAt);
          assert.equal(runsFor(h, webhookId).length, c.runs.length, "one delivery per planned time");
          assert.equal((await wallet.request("DELETE", `/webhook/${webhookId}`)).status, 200);
        });
      }
    } finally {
      await closeHarness(h);
    }
  },
});

Deno.test({
  name: "scheduler: charges, empty wallet, pause, resume, switching mode, deleting a due run",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const h = await harness();
    try {
      await t.step(
        "a run: 2 credits, a CallBilled, the payload, signed with a stable webhook-id",
        async () => {
          setClock(h, "2027-01-04T08:59:30.000Z");
          const wallet = await newWallet(h);
          await createScheduled(h, wallet, "daily", "0 9 * * *", "UTC");
          assert.equal(await balanceOf(h, wallet), 99);
          setClock(h, "2027-01-04T09:00:00.200Z");
          assert.equal((await tick(h)).fired, 1);
          const [run] = await waitForRuns(h, "daily", 1);
          assert.deepEqual(Object.keys(run.body).sort(), [
            "executedAt",
            "scheduledFor",
            "type",
            "walletHash",
            "webhookId",
          ]);
          assert.deepEqual(
            [run.body.type, run.body.webhookId, run.body.scheduledFor, run.body.walletHash],
            ["scheduled_webhook_run", "daily", "2027-01-04T09:00:00.000Z", wallet.hash],
          );
          assert.equal(
            run.request.headers["webhook-id"],
            `sch_daily_${Date.parse("2027-01-04T09:00:00Z") / 1000}`,
          );
          assert.equal(await balanceOf(h, wallet), 97);
          assert.deepEqual(await runLogs(h, wallet), [{
            path: "daily",
            status_code: 200,
            cost: 2,
            error: null,
          }]);
          const settled = await settledSchedule(h, wallet, "daily");
          assert.equal(settled.last_status, "success");
          assert.equal(settled.next_run_at.toISOString(), "2027-01-05T09:00:00.000Z");
          assert.equal((await wallet.request("DELETE", "/webhook/daily")).status, 200);
        },
      );

      await t.step("a failed delivery: lastStatus failure with the reason, not retried", async () => {
        setClock(h, "2027-01-04T09:59:30.000Z");
        const wallet = await newWallet(h);
        await createScheduled(h, wallet, "failing", "0 10 * * *", "UTC");
        h.receiver.reply((request) =>
          request.path === "/failing" ? new Response("down", { status: 503 }) : new Response("ok")
        );
        setClock(h, "2027-01-04T10:00:00.200Z");
        await tick(h);
        await waitForRuns(h, "failing", 1);
        const view = await settledSchedule(h, wallet, "failing");
        assert.deepEqual([view.last_status, view.last_error], ["failure", "HTTP 503 Service Unavailable"]);
        h.receiver.reply(() => new Response("ok"));
        await new Promise((resolve) => setTimeout(resolve, 1500));
        assert.equal(runsFor(h, "failing").length, 1, "no retry: the next run comes instead");
        assert.equal((await wallet.request("DELETE", "/webhook/failing")).status, 200);
      });

      await t.step(
        "empty wallet: no delivery, no charge, failure / Insufficient credits, schedule kept",
        async () => {
          setClock(h, "2027-02-01T11:58:00.000Z");
          const wallet = await newWallet(h);
          await createScheduled(h, wallet, "broke", "0 12 * * *", "UTC");
          // Spend down to 1 credit: a run costs 2.
          for (let i = 0; i < 98; i++) assert.equal((await wallet.request("GET", "/token")).status, 200);
          assert.equal(await balanceOf(h, wallet), 1);
          setClock(h, "2027-02-01T12:00:00.200Z");
          assert.equal((await tick(h)).refused, 1);
          assert.equal(await balanceOf(h, wallet), 1, "nothing charged");
          const [outbox] = await h.svc.db.sql`
          select count(*)::int as n from webhook_deliveries where wallet_id = ${wallet.hash}`;
          assert.equal(outbox.n, 0, "nothing queued");
          assert.deepEqual(await runLogs(h, wallet), [
            { path: "broke", status_code: 402, cost: 0, error: "Insufficient credits" },
          ]);
          const view = (await wallet.request("GET", "/webhook/broke")).json().schedule;
          assert.deepEqual([view.active, view.lastStatus, view.lastError, view.nextRunAt], [
            true,
            "failure",
            "Insufficient credits",
            "2027-02-02T12:00:00.000Z",
          ]);
          assert.ok(Date.parse(view.lastRunAt) >= Date.parse("2027-02-01T12:00:00Z"));

          // Credits come back: the next run goes out as usual.
          await h.svc.ledger.appendUnbilled({
            walletId: wallet.hash,
            decide: ({ wallet: row }) => ({
              outcome: undefined,
              events: [
                newEvent("CreditsGranted", { amount: 10, balance: row!.balance + 10, reason: "test top-up" }),
              ],
            }),
          });
          setClock(h, "2027-02-02T12:00:00.200Z");
          assert.equal((await tick(h)).fired, 1);
          await waitForRuns(h, "broke", 1);
          assert.equal(await balanceOf(h, wallet), 8);
          assert.equal((await settledSchedule(h, wallet, "broke")).last_status, "success");
          await new Promise((resolve) => setTimeout(resolve, 300));
          assert.equal(runsFor(h, "broke").length, 1, "the refused run is never sent");
          assert.equal((await wallet.request("DELETE", "/webhook/broke")).status, 200);
        },
      );

      await t.step("pause stops the runs; resume plans from now and replays nothing", async () => {
        setClock(h, "2027-03-01T10:00:30.000Z");
        const wallet = await newWallet(h);
        await createScheduled(h, wallet, "minutely", "* * * * *", "UTC");
        setClock(h, "2027-03-01T10:01:00.200Z");
        await tick(h);
        await waitForRuns(h, "minutely", 1);
        await settledSchedule(h, wallet, "minutely");

        const paused = await wallet.request("PATCH", "/webhook/minutely", { schedule: { active: false } });
        assert.deepEqual([paused.json().schedule.active, paused.json().schedule.nextRunAt], [false, null]);
        for (
          const at of ["2027-03-01T10:02:00.200Z", "2027-03-01T10:05:00.200Z", "2027-03-01T10:30:00.200Z"]
        ) {
          setClock(h, at);
          await tick(h);
        }
        assert.equal((await scheduleEvents(h, wallet, "minutely")).length, 1, "nothing while paused");
        const pausedView = (await wallet.request("GET", "/webhook/minutely")).json().schedule;
        assert.deepEqual([pausedView.nextRunAt, pausedView.lastStatus], [null, "success"]);

        setClock(h, "2027-03-01T10:30:20.000Z");
        const resumed = await wallet.request("PATCH", "/webhook/minutely", { schedule: { active: true } });
        assert.equal(resumed.json().schedule.nextRunAt, "2027-03-01T10:31:00.000Z");
        await tick(h);
        assert.equal((await scheduleEvents(h, wallet, "minutely")).length, 1, "no replay of the paused runs");
        setClock(h, "2027-03-01T10:31:00.200Z");
        await tick(h);
        const runs = await waitForRuns(h, "minutely", 2);
        assert.deepEqual(runs.map((run) => run.body.scheduledFor), [
          "2027-03-01T10:01:00.000Z",
          "2027-03-01T10:31:00.000Z",
        ]);
        assert.equal((await wallet.request("DELETE", "/webhook/minutely")).status, 200);
      });

      await t.step("PUT and PATCH replan at once; an edit that keeps the plan keeps a due run", async () => {
        setClock(h, "2027-03-02T07:59:00.000Z");
        const wallet = await newWallet(h);
        const url = `${h.receiver.url}/edited`;
        await createScheduled(h, wallet, "edited", "0 8 * * *", "UTC");
        const moved = await wallet.request("PUT", "/webhook/edited", {
          url,
          schedule: { cron: "0 8 * * *", timezone: "Asia/Tokyo" },
        });
        assert.equal(moved.json().schedule.nextRunAt, "2027-03-02T23:00:00.000Z");
        const patched = await wallet.request("PATCH", "/webhook/edited", {
          schedule: { cron: "15 8 * * *" },
        });
        assert.equal(patched.json().schedule.nextRunAt, "2027-03-02T23:15:00.000Z");
        // Due but not yet handled: a change of URL only keeps the planned run.
        setClock(h, "2027-03-02T23:15:00.100Z");
        const headers = await wallet.request("PATCH", "/webhook/edited", { headers: { "X-Edit": "1" } });
        assert.equal(headers.json().schedule.nextRunAt, "2027-03-02T23:15:00.000Z");
        await tick(h);
        const [run] = await waitForRuns(h, "edited", 1);
        assert.equal(run.body.scheduledFor, "2027-03-02T23:15:00.000Z");
        assert.equal(run.request.headers["x-edit"], "1");
        assert.equal((await wallet.request("DELETE", "/webhook/edited")).status, 200);
      });

      await t.step(
        "switching mode: schedule, mailbox (no runs), schedule again (planned from now)",
        async () => {
          setClock(h, "2027-04-01T09:59:00.000Z");
          const wallet = await newWallet(h);
          await createScheduled(h, wallet, "switch", "*/5 * * * *", "UTC");
          setClock(h, "2027-04-01T10:00:00.200Z");
          await tick(h);
          await waitForRuns(h, "switch", 1);
          await settledSchedule(h, wallet, "switch");

          const mailbox = await wallet.request("PATCH", "/webhook/switch", { schedule: null });
          assert.equal(mailbox.status, 200, mailbox.text);
          assert.equal(mailbox.json().schedule, undefined);
          assert.match(mailbox.json().email, /@/);
          for (const at of ["2027-04-01T10:05:00.200Z", "2027-04-01T10:10:00.200Z"]) {
            setClock(h, at);
            await tick(h);
          }
          assert.equal(runsFor(h, "switch").length, 1, "a mailbox webhook has no runs");

          setClock(h, "2027-04-01T10:12:00.000Z");
          const scheduled = await wallet.request("PATCH", "/webhook/switch", {
            schedule: { cron: "*/5 * * * *", timezone: "UTC" },
          });
          assert.equal(scheduled.json().email, undefined);
          assert.deepEqual(
            [scheduled.json().schedule.nextRunAt, scheduled.json().schedule.lastRunAt],
            ["2027-04-01T10:15:00.000Z", null],
          );
          await tick(h);
          setClock(h, "2027-04-01T10:15:00.200Z");
          await tick(h);
          const runs = await waitForRuns(h, "switch", 2);
          assert.deepEqual(runs.map((run) => run.body.scheduledFor), [
            "2027-04-01T10:00:00.000Z",
            "2027-04-01T10:15:00.000Z",
          ]);
          assert.equal((await wallet.request("DELETE", "/webhook/switch")).status, 200);
        },
      );

      await t.step("deleting a webhook with a due run: no run, no charge", async () => {
        setClock(h, "2027-05-01T09:59:00.000Z");
        const wallet = await newWallet(h);
        await createScheduled(h, wallet, "doomed", "0 10 * * *", "UTC");
        setClock(h, "2027-05-01T10:00:00.300Z");
        // Due, not yet handled: deleted first.
        assert.equal((await wallet.request("DELETE", "/webhook/doomed")).status, 200);
        await tick(h);

        // Claimed by a scheduler, deleted before its run's transaction: the run does not happen.
        await createScheduled(h, wallet, "raced", "* * * * *", "UTC");
        setClock(h, "2027-05-01T10:01:00.300Z");
        const options = { sql: h.svc.db.sql, ledger: h.svc.ledger, clock: h.svc.clock };
        const claims = await claimDueRuns(h.svc.db.sql, {
          now: h.svc.clock.now(),
          limit: 100,
          leaseMs: 30_000,
        });
        const claim = claims.find((c) => c.walletId === wallet.hash && c.webhookId === "raced");
        assert.ok(claim, "the due run was claimed");
        assert.equal((await wallet.request("DELETE", "/webhook/raced")).status, 200);
        assert.equal(await handleClaim(options, claim, h.svc.clock.now()), "lost");
        for (const other of claims.filter((c) => c !== claim)) {
          await handleClaim(options, other, h.svc.clock.now());
        }

        assert.deepEqual(await runLogs(h, wallet), [], "no run was billed");
        assert.equal(await balanceOf(h, wallet), 100 - 4, "only the 4 webhook calls");
        const [left] = await h.svc.db.sql`
          select (select count(*)::int from webhook_deliveries where wallet_id = ${wallet.hash}) as deliveries,
                 (select count(*)::int from schedule_claims where wallet_id = ${wallet.hash}) as claims`;
        assert.deepEqual([left.deliveries, left.claims], [0, 0]);
        assert.equal((await scheduleEvents(h, wallet, "doomed")).length, 0);
        assert.equal((await scheduleEvents(h, wallet, "raced")).length, 0);
      });

      await t.step(
        "a webhook scheduled before the schedule model existed is adopted from its log",
        async () => {
          setClock(h, "2027-05-02T08:00:00.000Z");
          const wallet = await newWallet(h);
          await createScheduled(h, wallet, "legacy", "0 9 * * *", "UTC");
          const rowOf = async () => {
            const [row] = await h.svc.db.sql`select * from schedules where wallet_id = ${wallet.hash}`;
            return row ? { ...row } : undefined;
          };
          const projected = await rowOf();
          // As migration 005 finds a webhook scheduled under the registry alone.
          await h.svc.db.sql`delete from schedules where wallet_id = ${wallet.hash}`;
          const view = (await wallet.request("GET", "/webhook/legacy")).json().schedule;
          assert.equal(view.nextRunAt, "2027-05-02T09:00:00.000Z", "the view plans it without the row");
          assert.equal(await adoptUnplannedSchedules(h.svc.db.sql), 1);
          assert.deepEqual(await rowOf(), projected);
          assert.equal(await adoptUnplannedSchedules(h.svc.db.sql), 0);
          assert.equal((await wallet.request("DELETE", "/webhook/legacy")).status, 200);
        },
      );

      await t.step("replay rebuilds the schedule model exactly; the audit adds up", async () => {
        await outboxDrained(h);
        const report = await replayProjections(h.svc.db.sql, { keys: h.svc.secrets.keys });
        for (const table of report.tables) {
          assert.equal(table.onlyLive + table.onlyReplayed, 0, `${table.table}: ${table.samples.join("; ")}`);
        }
        assert.ok(report.tables.some((table) => table.table === "schedules"));
        assert.deepEqual((await auditLedger(h.svc.db.sql)).mismatches, []);
      });
    } finally {
      await closeHarness(h);
    }
  },
});

Deno.test({
  name: "scheduler: a restart across planned times runs a late one once and skips older ones unpaid",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const h = await harness();
    const instance = () =>
      startScheduler({ sql: h.svc.db.sql, ledger: h.svc.ledger, clock: h.svc.clock, pollMs: 100 });
    try {
      await t.step("hourly: down from 10:00 to 13:03, 11:00 and 12:00 skipped, 13:00 runs late", async () => {
        setClock(h, "2027-06-01T09:58:00.000Z");
        const wallet = await newWallet(h);
        await createScheduled(h, wallet, "hourly", "0 * * * *", "UTC");
        let scheduler = instance();
        setClock(h, "2027-06-01T10:00:00.000Z");
        await waitForRuns(h, "hourly", 1);
        await settledSchedule(h, wallet, "hourly");
        await scheduler.stop();

        setClock(h, "2027-06-01T13:03:00.000Z");
        scheduler = instance();
        const runs = await waitForRuns(h, "hourly", 2);
        await new Promise((resolve) => setTimeout(resolve, 500));
        await scheduler.stop();
        assert.deepEqual(runsFor(h, "hourly").map((run) => run.body.scheduledFor), [
          "2027-06-01T10:00:00.000Z",
          "2027-06-01T13:00:00.000Z",
        ]);
        const lateness = Date.parse(runs[1].body.executedAt) - Date.parse("2027-06-01T13:00:00Z");
        assert.ok(lateness >= 3 * 60_000 && lateness < 3 * 60_000 + 5 * SECOND, `${lateness} ms late`);

        const events = await scheduleEvents(h, wallet, "hourly");
        assert.deepEqual(events.map((e) => e.type), [
          "ScheduleFired",
          "ScheduleRunsSkipped",
          "ScheduleFired",
        ]);
        assert.equal(events[1].firstPlannedAt, "2027-06-01T11:00:00.000Z");
        assert.ok(Date.parse(events[1].missedBefore) > Date.parse("2027-06-01T12:00:00Z"));
        assert.ok(Date.parse(events[1].missedBefore) <= Date.parse("2027-06-01T13:00:00Z"));
        assert.equal(events[1].nextRunAt, "2027-06-01T13:00:00.000Z");
        assert.deepEqual(
          (await runLogs(h, wallet)).map((log) => log.cost),
          [2, 2],
          "the skipped runs are free",
        );
        assert.equal(await balanceOf(h, wallet), 100 - 1 - 4);
        const view = (await wallet.request("GET", "/webhook/hourly")).json().schedule;
        assert.deepEqual([view.nextRunAt, view.lastStatus], ["2027-06-01T14:00:00.000Z", "success"]);
        assert.equal((await wallet.request("DELETE", "/webhook/hourly")).status, 200);
      });

      await t.step("every minute: each run within 5 minutes runs once, older ones are skipped", async () => {
        setClock(h, "2027-06-02T10:00:30.000Z");
        const wallet = await newWallet(h);
        await createScheduled(h, wallet, "burst", "* * * * *", "UTC");
        // The service was down from before 10:01 until 10:08:20.
        setClock(h, "2027-06-02T10:08:20.000Z");
        const scheduler = instance();
        await waitForRuns(h, "burst", 5);
        await new Promise((resolve) => setTimeout(resolve, 500));
        await scheduler.stop();
        assert.deepEqual(runsFor(h, "burst").map((run) => run.body.scheduledFor), [
          "2027-06-02T10:04:00.000Z",
          "2027-06-02T10:05:00.000Z",
          "2027-06-02T10:06:00.000Z",
          "2027-06-02T10:07:00.000Z",
          "2027-06-02T10:08:00.000Z",
        ]);
        const events = await scheduleEvents(h, wallet, "burst");
        assert.equal(events[0].type, "ScheduleRunsSkipped");
        assert.equal(events[0].firstPlannedAt, "2027-06-02T10:01:00.000Z");
        assert.equal(events.filter((e) => e.type === "ScheduleFired").length, 5);
        assert.equal(await balanceOf(h, wallet), 100 - 1 - 10);
        const settled = await settledSchedule(h, wallet, "burst");
        assert.equal(settled.next_run_at.toISOString(), "2027-06-02T10:09:00.000Z");
        assert.equal((await wallet.request("DELETE", "/webhook/burst")).status, 200);
      });

      await t.step("a daily run missed entirely is recorded as skipped, not charged", async () => {
        setClock(h, "2027-06-03T05:00:00.000Z");
        const wallet = await newWallet(h);
        await createScheduled(h, wallet, "report", "0 6 * * *", "UTC");
        setClock(h, "2027-06-03T06:30:00.000Z");
        const summary = await tick(h);
        assert.equal(summary.skipped, 1);
        assert.equal(summary.fired, 0);
        const view = (await wallet.request("GET", "/webhook/report")).json().schedule;
        assert.equal(view.nextRunAt, "2027-06-04T06:00:00.000Z");
        assert.deepEqual([view.lastRunAt, view.lastStatus], [null, "failure"]);
        assert.match(
          view.lastError,
          /^Skipped: the runs planned from 2027-06-03T06:00:00\.000Z to before .* were missed by more than 5 minutes$/,
        );
        assert.equal(await balanceOf(h, wallet), 98, "2 webhook calls, no run");
        assert.equal(runsFor(h, "report").length, 0);
      });

      await t.step("the audit adds up", async () => {
        assert.deepEqual((await auditLedger(h.svc.db.sql)).mismatches, []);
      });
    } finally {
      await closeHarness(h);
    }
  },
});
