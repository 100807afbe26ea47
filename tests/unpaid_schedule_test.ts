// An unpaid schedule turns inactive (issue 21), with the service in the test process, a clock the
// test moves minute by minute and a local receiver for the wallet's alerts: a wallet at 0 credits
// gets each run refused (free, `failure` / `Insufficient credits`, as CONTRACT section 10 says), and
// after WEBHOOK_PAUSE_AFTER_FAILURES refusals in a row its schedule turns inactive with the pause's
// alert, so the log stops growing; credits alone do not restart it, the owner's
// `schedule.active: true` does. The audit and the replay stay clean.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sha256Hex } from "../src/ids.ts";
import { startDeliveryWorker } from "../src/webhooks/delivery_worker.ts";
import { deliveryChannels } from "../src/delivery_channels.ts";
import { runDueSchedules } from "../src/schedules/scheduler.ts";
import { newEvent } from "../events/catalogue.ts";
import { auditLedger } from "../src/tasks/audit.ts";
import { replayProjections } from "../src/tasks/replay.ts";
import { eventually } from "./helpers/wait.ts";

const PAUSE_AFTER = 3;

Deno.test({
  name: "an unpaid schedule turns inactive after its refused runs, with an alert, until its owner resumes it",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const svc = await inProcessService({ UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" });
    const receiver = startReceiver((request) => new Response(request.path === "/alerts" ? "noted" : "ok"));
    const health = { pauseAfterFailures: PAUSE_AFTER, pauseAfterMs: 24 * 3600_000 };
    const worker = startDeliveryWorker({
      sql: svc.db.sql,
      ledger: svc.ledger,
      clock: svc.clock,
      channels: deliveryChannels({
        sql: svc.db.sql,
        signing: { serverSecret: "unpaid-schedule-test-0123456789", publicUrl: "http://service" },
        allowPrivate: true,
      }),
      retryScale: 1,
      health,
    });
    const setClock = (iso: string) => svc.clock.advance(Date.parse(iso) - svc.clock.now().getTime());
    const tick = () => runDueSchedules({ sql: svc.db.sql, ledger: svc.ledger, clock: svc.clock, health });
    try {
      setClock("2027-05-01T09:59:30.000Z");
      const token = await svc.newToken();
      const hash = await sha256Hex(token);
      const request = async (method: string, path: string, body?: unknown) => {
        const res = await svc.request(method, path, {
          token,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { ...res, json: () => JSON.parse(res.text) };
      };
      const balance = async () =>
        (await svc.db.sql`select balance from wallets where wallet_id = ${hash}`)[0].balance;
      const logSize = async () =>
        (await svc.db.sql`select count(*)::int as n from events where wallet_id = ${hash}`)[0].n;
      const runs = () => receiver.received.filter((r) => r.path === "/job");
      const alerts = () => receiver.received.filter((r) => r.path === "/alerts");
      const settings = await request("PUT", "/token/settings", {
        low_balance_threshold: 0,
        low_balance_webhook: { url: `${receiver.url}/alerts` },
      });
      assert.equal(settings.status, 200, settings.text);
      const created = await request("POST", "/webhook", {
        webhookId: "job",
        url: `${receiver.url}/job`,
        schedule: { cron: "* * * * *", timezone: "UTC" },
      });
      assert.equal(created.status, 200, created.text);
      // The wallet spends the rest of its credits and sits at 0.
      for (let left = await balance(); left > 0; left--) {
        assert.equal((await request("GET", "/token")).status, 200);
      }
      assert.equal(await balance(), 0);

      await t.step(
        "refused runs are free failures; the last of the bound turns the schedule inactive",
        async () => {
          // A wallet at 0 cannot pay for GET /webhook either: the schedule is read from its table.
          const schedule = async () =>
            (await svc.db.sql`
            select active, next_run_at, last_status, last_error from schedules
            where wallet_id = ${hash} and webhook_id = 'job'`)[0];
          for (const [i, minute] of ["10:00", "10:01", "10:02"].entries()) {
            setClock(`2027-05-01T${minute}:00.300Z`);
            assert.deepEqual(await tick(), { fired: 0, refused: 1, skipped: 0, lost: 0, failed: 0 });
            const row = await schedule();
            assert.deepEqual([row.last_status, row.last_error], ["failure", "Insufficient credits"]);
            assert.equal(row.active, i < PAUSE_AFTER - 1, `active after refusal ${i + 1}`);
          }
          assert.equal(await balance(), 0, "nothing charged");
          assert.deepEqual([(await schedule()).active, (await schedule()).next_run_at], [false, null]);
          const [healthRow] = await svc.db.sql`
          select paused_reason, failures, last_status from webhook_health where wallet_id = ${hash}`;
          assert.deepEqual([healthRow.paused_reason, healthRow.failures, healthRow.last_status], [
            "runs not paid",
            3,
            402,
          ]);
          const [alert] = await eventually("the alert", () => alerts().length ? alerts() : undefined);
          const body = JSON.parse(alert.body);
          assert.deepEqual(
            [body.type, body.webhookId, body.failures, body.lastStatus, body.lastError, body.resume],
            [
              "webhook.paused",
              "job",
              3,
              402,
              "Insufficient credits",
              'PATCH /webhook/job with {"schedule": {"active": true}}',
            ],
          );
          assert.match(body.subject, /its runs cannot be paid/);
          assert.match(body.text, /Add credits, then resume it/);
          assert.equal(runs().length, 0, "no run was sent");
          // The alert's attempt is recorded after the receiver has answered: the log settles first.
          await eventually("the alert's attempt in the log", async () => {
            const [row] = await svc.db.sql`
              select count(*)::int as n from events where wallet_id = ${hash} and type = 'DeliveryAttempted'`;
            return row.n === 1 ? true : undefined;
          });
        },
      );

      await t.step("inactive, it writes nothing more to the log, even with credits again", async () => {
        const before = await logSize();
        for (const minute of ["10:03", "10:04", "10:05"]) {
          setClock(`2027-05-01T${minute}:00.300Z`);
          assert.equal((await tick()).refused, 0);
        }
        assert.equal(await logSize(), before, "no event while it waits for its owner");
        await svc.ledger.appendUnbilled({
          walletId: hash,
          decide: ({ wallet }) => ({
            outcome: undefined,
            events: [
              newEvent("CreditsGranted", { amount: 10, balance: wallet!.balance + 10, reason: "top-up" }),
            ],
          }),
        });
        setClock("2027-05-01T10:06:00.300Z");
        assert.equal((await tick()).fired, 0, "credits alone do not restart it");
        const view = (await request("GET", "/webhook/job")).json();
        assert.deepEqual([view.schedule.active, view.pausedReason], [false, "runs not paid"]);
        assert.equal(alerts().length, 1, "one alert");
      });

      await t.step("the owner turns it on again: the next run goes out and is charged", async () => {
        setClock("2027-05-01T10:06:30.000Z");
        const resumed = await request("PATCH", "/webhook/job", { schedule: { active: true } });
        assert.equal(resumed.status, 200, resumed.text);
        assert.deepEqual(
          [resumed.json().schedule.active, resumed.json().schedule.nextRunAt, resumed.json().pausedReason],
          [true, "2027-05-01T10:07:00.000Z", undefined],
        );
        const before = await balance();
        setClock("2027-05-01T10:07:00.300Z");
        assert.equal((await tick()).fired, 1);
        await eventually("the run", () => runs().length === 1 ? true : undefined);
        assert.equal(await balance(), before - 2);
      });

      await t.step("the audit and the replay are clean", async () => {
        assert.deepEqual((await auditLedger(svc.db.sql)).mismatches, []);
        const replay = await replayProjections(svc.db.sql, { keys: svc.secrets.keys });
        for (const table of replay.tables) {
          assert.deepEqual(
            [table.table, table.onlyLive, table.onlyReplayed],
            [table.table, 0, 0],
            table.samples.join("\n"),
          );
        }
      });
    } finally {
      await worker.stop();
      await receiver.close();
      await svc.close();
    }
  },
});
