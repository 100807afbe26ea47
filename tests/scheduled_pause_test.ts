// A scheduled webhook paused after failed runs (issue 13), with the service in the test process, a
// clock the test moves minute by minute, its delivery worker and a local receiver: after
// WEBHOOK_PAUSE_AFTER_FAILURES failed runs its schedule turns inactive, with the reason, and the
// alert goes to the wallet's alert webhook; no run is made or charged while it is paused; an
// active schedule resumes it. The audit and the replay stay clean.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sha256Hex } from "../src/ids.ts";
import { startDeliveryWorker } from "../src/webhooks/delivery_worker.ts";
import { deliveryChannels } from "../src/delivery_channels.ts";
import { runDueSchedules } from "../src/schedules/scheduler.ts";
import { auditLedger } from "../src/tasks/audit.ts";
import { replayProjections } from "../src/tasks/replay.ts";
import { eventually } from "./helpers/wait.ts";

Deno.test({
  name: "a scheduled webhook pauses after failed runs, with its alert, and resumes",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const svc = await inProcessService({ UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" });
    const receiver = startReceiver((request) =>
      request.path === "/alerts" ? new Response("noted") : new Response("down", { status: 500 })
    );
    const worker = startDeliveryWorker({
      sql: svc.db.sql,
      ledger: svc.ledger,
      clock: svc.clock,
      channels: deliveryChannels({
        sql: svc.db.sql,
        signing: { serverSecret: "scheduled-pause-test-0123456789", publicUrl: "http://service" },
        allowPrivate: true,
      }),
      retryScale: 1,
      health: { pauseAfterFailures: 3, pauseAfterMs: 24 * 3600_000 },
    });
    const setClock = (iso: string) => svc.clock.advance(Date.parse(iso) - svc.clock.now().getTime());
    const tick = () => runDueSchedules({ sql: svc.db.sql, ledger: svc.ledger, clock: svc.clock });
    try {
      setClock("2027-04-01T09:59:30.000Z");
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
      const runs = () => receiver.received.filter((r) => r.path === "/job");
      const alerts = () => receiver.received.filter((r) => r.path === "/alerts");
      assert.equal(
        (await request("PUT", "/token/settings", {
          low_balance_threshold: 0,
          low_balance_webhook: { url: `${receiver.url}/alerts` },
        })).status,
        200,
      );
      const created = await request("POST", "/webhook", {
        webhookId: "job",
        url: `${receiver.url}/job`,
        schedule: { cron: "* * * * *", timezone: "UTC" },
      });
      assert.equal(created.status, 200, created.text);

      /** One run at `minute`, its outcome recorded. */
      const runAt = async (minute: string) => {
        setClock(minute.replace(":00.000Z", ":00.300Z"));
        const fired = (await tick()).fired;
        if (fired === 1) {
          await eventually("the run's outcome", async () => {
            const [row] = await svc.db.sql`
              select last_status from schedules where wallet_id = ${hash} and webhook_id = 'job'`;
            return row?.last_status ?? undefined;
          });
        }
        return fired;
      };

      await t.step("three failed runs turn the schedule inactive, with the reason and an alert", async () => {
        for (const minute of ["10:00", "10:01"]) {
          assert.equal(await runAt(`2027-04-01T${minute}:00.000Z`), 1);
          assert.equal((await request("GET", "/webhook/job")).json().schedule.active, true);
        }
        assert.equal(await runAt("2027-04-01T10:02:00.000Z"), 1);
        const view = await eventually("the pause", async () => {
          const view = (await request("GET", "/webhook/job")).json();
          return view.schedule.active ? undefined : view;
        });
        assert.deepEqual(
          [view.schedule.active, view.schedule.nextRunAt, view.schedule.lastStatus, view.pausedReason],
          [false, null, "failure", "endpoint failing"],
        );
        assert.equal(view.active, undefined, "a schedule pauses with schedule.active");
        assert.ok(Date.parse(view.pausedAt) >= Date.parse("2027-04-01T10:02:00Z"));
        const [alert] = await eventually("the alert", () => alerts().length ? alerts() : undefined);
        const body = JSON.parse(alert.body);
        assert.deepEqual([body.type, body.webhookId, body.failures, body.lastStatus, body.resume], [
          "webhook.paused",
          "job",
          3,
          500,
          'PATCH /webhook/job with {"schedule": {"active": true}}',
        ]);
        assert.match(body.text, /Its schedule is inactive: no run is made or charged until you resume it\./);
        assert.equal(runs().length, 3);
      });

      await t.step("while paused no run is made or charged", async () => {
        const before = await balance();
        for (const minute of ["10:03", "10:04"]) assert.equal(await runAt(`2027-04-01T${minute}:00.000Z`), 0);
        assert.deepEqual([runs().length, await balance()], [3, before]);
        const list = (await request("GET", "/webhook/job/deliveries")).json().deliveries;
        assert.deepEqual(list.map((d: any) => [d.kind, d.status]), [
          ["scheduled", "failed"],
          ["scheduled", "failed"],
          ["scheduled", "failed"],
        ]);
      });

      await t.step("an active schedule resumes it; the next run goes out", async () => {
        receiver.reply((request) => new Response(request.path === "/alerts" ? "noted" : "ok"));
        setClock("2027-04-01T10:04:30.000Z");
        const resumed = (await request("PATCH", "/webhook/job", { schedule: { active: true } })).json();
        assert.deepEqual([resumed.schedule.active, resumed.schedule.nextRunAt, resumed.pausedReason], [
          true,
          "2027-04-01T10:05:00.000Z",
          undefined,
        ]);
        const before = await balance();
        assert.equal(await runAt("2027-04-01T10:05:00.000Z"), 1);
        assert.equal(await balance(), before - 2, "the run's 2 credits");
        const view = (await request("GET", "/webhook/job")).json();
        assert.deepEqual([view.schedule.lastStatus, view.pausedReason], ["success", undefined]);
        assert.equal(alerts().length, 1, "one alert for the episode");
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
