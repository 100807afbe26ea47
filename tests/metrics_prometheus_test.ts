// A real Prometheus (Debian's) scrapes the service every second with the shipped configuration, and
// PromQL over its HTTP API sees the session: the billed calls sent, the credits the audit sums, the
// outbox falling behind while a receiver is down and catching up after, and a cron run made late by
// stalling the service (SIGSTOP) across its planned minute.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { freePort, runTask, startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { eventually } from "./helpers/wait.ts";
import { type PrometheusServer, startPrometheus } from "./helpers/prometheus.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const BILLED = 'sum(credit_api_billed_calls_total{endpoint="kv"})';

/** Polls a PromQL query until `accept` takes its value. */
function promqlUntil(prometheus: PrometheusServer, promql: string, accept: (value: number) => boolean) {
  return eventually(`${promql} to be accepted`, async () => {
    const value = await prometheus.query(promql);
    return value !== undefined && accept(value) ? value : undefined;
  }, 30_000);
}

Deno.test({
  name: "prometheus: PromQL sees billed calls, the audit's credits, the outbox age and a late cron run",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const metricsPort = freePort();
    const svc = await startService({
      smtp: true,
      env: {
        METRICS_PORT: String(metricsPort),
        UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
        DELIVERY_RETRY_SCALE: "0.001",
      },
    });
    const cronReceiver = startReceiver();
    const receiver = startReceiver(() => new Response("down", { status: 503 }));
    let prometheus: PrometheusServer | undefined;
    let stall: Promise<void> = Promise.resolve();
    try {
      prometheus = await startPrometheus({ targets: [`127.0.0.1:${metricsPort}`], port: freePort() });
      const p = prometheus;
      const client = walletClient(svc, await newToken(svc));
      const created = await client.postJson("/webhook", {
        url: `${cronReceiver.url}/cron`,
        webhookId: "cron",
        schedule: { cron: "* * * * *", timezone: "UTC" },
      });
      assert.equal(created.status, 200, created.text);
      // The service stops from 1.5 s before the next minute (at least 3 s away) to 3.5 s after it.
      const toMinute = 60_000 - (Date.now() % 60_000);
      const stallAt = (toMinute < 3_000 ? toMinute + 60_000 : toMinute) - 1_500;
      stall = sleep(stallAt).then(async () => {
        Deno.kill(svc.pid(), "SIGSTOP");
        await sleep(5_000);
        Deno.kill(svc.pid(), "SIGCONT");
      });
      await promqlUntil(p, 'up{job="credit-api"}', (up) => up === 1);

      await t.step("the billed calls Prometheus counts are the calls sent", async () => {
        const before = await promqlUntil(p, BILLED, () => true);
        const sent = 40;
        for (let i = 0; i < sent; i++) {
          assert.equal((await client.post(`/kv/counted/k${i}`, "v")).status, 200);
        }
        const after = await promqlUntil(p, BILLED, (value) => value >= before + sent);
        assert.equal(after - before, sent);
        const rate = await promqlUntil(
          p,
          `sum(rate(credit_api_billed_calls_total{endpoint="kv"}[30s]))`,
          () => true,
        );
        assert.ok(rate > 0, `rate ${rate}`);
      });

      await t.step("the outbox age rises while the receiver is down and falls after", async () => {
        const hook = await client.postJson("/webhook", { url: `${receiver.url}/down`, webhookId: "down" });
        assert.equal(hook.status, 200, hook.text);
        for (let i = 0; i < 3; i++) {
          const mail = await sendMail(svc, {
            from: "ann@sender.example",
            to: hook.json().email,
            subject: `m${i}`,
            text: "x",
          });
          assert.equal(mail.code, 250);
        }
        const risen = await promqlUntil(
          p,
          "max(credit_api_outbox_oldest_pending_seconds)",
          (age) => age >= 4,
        );
        receiver.reply(() => new Response("ok"));
        await promqlUntil(p, "max(credit_api_outbox_oldest_pending_seconds)", (age) => age === 0);
        const peak = await p.query("max(max_over_time(credit_api_outbox_oldest_pending_seconds[2m]))");
        assert.ok(peak !== undefined && peak >= risen, `peak ${peak}`);
        const failed = await p.query('sum(credit_api_delivery_attempts_total{outcome="failed"})');
        assert.ok(failed !== undefined && failed >= 3, `failed attempts ${failed}`);
      });

      await t.step("a cron run made late by a stall shows in the lateness histogram", async () => {
        await stall;
        await cronReceiver.waitFor(1, 20_000);
        const late = await promqlUntil(
          p,
          'sum(credit_api_schedule_lateness_seconds_count) - sum(credit_api_schedule_lateness_seconds_bucket{le="2"})',
          (n) => n >= 1,
        );
        assert.ok(late >= 1);
        assert.ok((await promqlUntil(p, "sum(credit_api_schedule_late_runs_total)", (n) => n >= 1)) >= 1);
      });

      await t.step("the shipped rules load and evaluate against the live series without error", async () => {
        const body = await (await fetch(`${p.url}/api/v1/rules`)).json();
        const rules = body.data.groups.flatMap((g: { rules: { name: string; health: string }[] }) => g.rules);
        assert.equal(rules.length, 8);
        for (const rule of rules) assert.equal(rule.health, "ok", `${rule.name}: ${JSON.stringify(rule)}`);
      });

      await t.step("the credits charged are the audit's credits out", async () => {
        // Two scrapes after the last call, then the service stops and the audit reads the database.
        await sleep(2_500);
        const charged = await p.query("sum(credit_api_credits_charged_total)");
        await svc.stop();
        const audit = await runTask(svc, "audit");
        assert.equal(audit.code, 0, audit.stdout + audit.stderr);
        const creditsOut = Number(/(\d+) credits out/.exec(audit.stdout)?.[1]);
        assert.ok(creditsOut > 40, audit.stdout);
        assert.equal(charged, creditsOut);
      });
    } finally {
      await stall.catch(() => {});
      await prometheus?.stop();
      await receiver.close();
      await cronReceiver.close();
      await svc.dispose();
    }
  },
});
