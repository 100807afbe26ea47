// GET /schedule-preview (issue 27): the next 5 runs of a cron in a zone, free and limited per wallet
// with the other free views, refused with POST /webhook's own phrases, and in agreement with the
// scheduler: the runs a scheduled webhook then makes, with a clock the test moves across a DST
// change, are the previewed instants.
import assert from "node:assert/strict";
import { eventually } from "./helpers/wait.ts";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { inProcessService } from "./helpers/in_process.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { startDeliveryWorker } from "../src/webhooks/delivery_worker.ts";
import { deliveryChannels } from "../src/delivery_channels.ts";
import { runDueSchedules } from "../src/schedules/scheduler.ts";

const preview = (cron: string, timezone: string) =>
  `/schedule-preview?cron=${encodeURIComponent(cron)}&timezone=${encodeURIComponent(timezone)}`;

Deno.test({
  name: "schedule preview through HTTP: free, token required, the webhook's phrases, limited",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const svc = await startService();
    try {
      const anonymous = await call(svc, "GET", preview("0 9 * * 1-5", "Europe/Paris"));
      assert.equal(anonymous.status, 401);
      const client = walletClient(svc, await newToken(svc));
      const before = (await client.get("/token")).balance!;

      const shown = await client.get(preview("0 9 * * 1-5", "europe/paris"));
      assert.deepEqual([shown.status, shown.cost], [200, 0], shown.text);
      const body = shown.json();
      assert.deepEqual([body.cron, body.timezone, body.runs.length], ["0 9 * * 1-5", "Europe/Paris", 5]);
      let previous = Date.now();
      for (const run of body.runs) {
        const at = Date.parse(run.at);
        assert.ok(at > previous, `${run.at} after the one before`);
        previous = at;
        assert.match(run.local, /^\d{4}-\d\d-\d\dT09:00:00\+0[12]:00$/, run.local);
        assert.equal(Date.parse(run.local), at, "the same instant");
        const weekday = new Date(run.local.slice(0, 10)).getUTCDay();
        assert.ok(weekday >= 1 && weekday <= 5, `${run.local} is a weekday`);
      }
      assert.equal((await client.get("/token")).balance, before - 1, "only GET /token was charged");

      // Every refusal is POST /webhook's for the same schedule, word for word.
      for (
        const [cron, timezone] of [
          ["0 9 * *", "UTC"],
          ["@daily", "UTC"],
          ["61 * * * *", "UTC"],
          ["0 0 30 2 *", "UTC"],
          ["0 9 * * *", "Mars/Olympus"],
          ["0 9 * * *", "+02:00"],
          ["x".repeat(201), "UTC"],
        ]
      ) {
        const refused = await client.get(preview(cron, timezone));
        const created = await client.postJson("/webhook", {
          url: "https://example.com/hook",
          webhookId: "job",
          schedule: { cron, timezone },
        });
        assert.equal(created.status, 400, created.text);
        assert.deepEqual([refused.status, refused.text, refused.cost], [400, created.text, 0], cron);
      }
      const missing = await client.get("/schedule-preview?cron=0+9+*+*+*");
      assert.deepEqual([missing.status, missing.cost], [400, 0]);
      assert.match(missing.text, /timezone/);

      // 30 a minute with /token/ledger and /token/usage: the calls above count too.
      let limited;
      for (let i = 0; i < 40 && !limited; i++) {
        const answer = await client.get(i % 2 ? "/token/ledger" : preview("*/5 * * * *", "UTC"));
        if (answer.status === 429) limited = answer;
      }
      assert.ok(limited, "a 429 within 40 calls");
      assert.ok(Number(limited.headers.get("retry-after")) >= 1);
      assert.equal(limited.cost, 0);
      const after = await client.get(preview("*/5 * * * *", "UTC"));
      assert.equal(after.status, 429, "the preview shares the limit");
    } finally {
      await svc.dispose();
    }
  },
});

Deno.test({
  name: "schedule preview: the scheduler runs a webhook at the previewed instants, across DST",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const svc = await inProcessService({ UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" });
    const receiver = startReceiver();
    const worker = startDeliveryWorker({
      sql: svc.db.sql,
      ledger: svc.ledger,
      clock: svc.clock,
      channels: deliveryChannels({
        sql: svc.db.sql,
        signing: { serverSecret: "preview-test-secret-0123456789", publicUrl: "http://service" },
        allowPrivate: true,
      }),
      retryScale: 1,
    });
    const setClock = (iso: string) => svc.clock.advance(Date.parse(iso) - svc.clock.now().getTime());
    try {
      const token = await svc.newToken();
      const get = async (path: string) => JSON.parse((await svc.request("GET", path, { token })).text);
      // 02:30 in Paris: on 28 March 2027 the clocks jump from 02:00 to 03:00.
      setClock("2027-03-25T12:00:00Z");
      const cron = "30 2 * * *";
      const { runs } = await get(preview(cron, "Europe/Paris"));
      assert.deepEqual(runs.map((r: any) => r.local), [
        "2027-03-26T02:30:00+01:00",
        "2027-03-27T02:30:00+01:00",
        "2027-03-28T03:00:00+02:00",
        "2027-03-29T02:30:00+02:00",
        "2027-03-30T02:30:00+02:00",
      ]);
      const created = await svc.request("POST", "/webhook", {
        token,
        body: JSON.stringify({
          webhookId: "nightly",
          url: `${receiver.url}/nightly`,
          schedule: { cron, timezone: "Europe/Paris" },
        }),
        headers: { "content-type": "application/json" },
      });
      assert.equal(created.status, 200, created.text);
      assert.equal(
        JSON.parse(created.text).schedule.nextRunAt,
        runs[0].at,
        "the webhook plans the first run",
      );
      for (const [i, run] of runs.entries()) {
        setClock(run.at);
        await runDueSchedules({ sql: svc.db.sql, ledger: svc.ledger, clock: svc.clock });
        // The service wakes its own worker after a commit that queues a delivery; this one is the test's.
        worker.wake();
        await receiver.waitFor(i + 1, 30_000).catch(async (error) => {
          const rows = await svc.db.sql`select id, attempts, next_attempt_at, held, locked_until, created_at
            from webhook_deliveries order by created_at`;
          throw new Error(`${error.message} at run ${i + 1} (${run.at}): ${JSON.stringify(rows)}`);
        });
        // The attempt is recorded before the clock jumps a day: a lease still held then would expire
        // in that jump and the run would be claimed and sent again.
        await eventually(`run ${i + 1} recorded`, async () => {
          const [{ open }] = await svc.db.sql`select count(*)::int as open from webhook_deliveries
            where next_attempt_at is not null or locked_until is not null`;
          return open === 0 || undefined;
        });
      }
      const fired = receiver.received.map((r) => JSON.parse(r.body).scheduledFor);
      assert.deepEqual(fired, runs.map((r: any) => r.at), "run by the scheduler at the previewed instants");
    } finally {
      await worker.stop();
      await receiver.close();
      await svc.close();
    }
  },
});
