// The metric families move when their events happen, through the real HTTP and SMTP interfaces, and
// their label sets stay bounded: 1,000 wallets, each with its own bucket, key and mailbox, and 1,000
// paths that match no route leave the series count where a handful of calls left it.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { freePort, startService } from "./helpers/service.ts";
import { scrape, type Series, valueOf } from "./helpers/metrics.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { eventually } from "./helpers/wait.ts";

const moved = (before: Series, after: Series, name: string, labels: Record<string, string> = {}) =>
  valueOf(after, name, labels) - valueOf(before, name, labels);

Deno.test("metrics families: each moves with its event; 1,000 wallets and paths add no series", async (t) => {
  const svc = await startService({
    smtp: true,
    env: {
      METRICS_PORT: String(freePort()),
      UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
      DELIVERY_RETRY_SCALE: "0.001",
      // A webhook pauses at its first failed attempt: the paused gauge moves within one reading.
      WEBHOOK_PAUSE_AFTER_FAILURES: "1",
      WEBHOOK_PAUSE_AFTER_HOURS: "0",
    },
  });
  const receiver = startReceiver();
  try {
    const client = walletClient(svc, await newToken(svc));

    await t.step(
      "HTTP by route template; ledger commits and batches; credits charged and granted",
      async () => {
        const before = await scrape(svc);
        await newToken(svc);
        for (let i = 0; i < 5; i++) assert.equal((await client.post(`/kv/box/key-${i}`, "v")).status, 200);
        const after = await scrape(svc);
        const route = { route: "/kv/:bucket/:key", method: "POST", status_class: "2xx" };
        assert.equal(moved(before, after, "credit_api_http_requests_total", route), 5);
        assert.equal(
          moved(before, after, "credit_api_http_request_duration_seconds_count", { route: route.route }),
          5,
        );
        assert.ok(moved(before, after, "credit_api_ledger_commits_total") >= 1);
        assert.ok(moved(before, after, "credit_api_ledger_batch_size_count") >= 1);
        assert.ok(moved(before, after, "credit_api_ledger_batch_seconds_count", { phase: "working" }) >= 1);
        assert.equal(moved(before, after, "credit_api_billed_calls_total", { endpoint: "kv" }), 5);
        assert.equal(moved(before, after, "credit_api_credits_charged_total", { endpoint: "kv" }), 5);
        assert.equal(moved(before, after, "credit_api_credits_credited_total", { source: "granted" }), 100);
        assert.ok(valueOf(after, "credit_api_db_pool_size") >= 1);
        assert.equal(valueOf(after, "credit_api_db_outage"), 0);
      },
    );

    await t.step("402 when the credits run out, counted", async () => {
      const poor = walletClient(svc, await newToken(svc));
      const before = await scrape(svc);
      let status = 200;
      for (let i = 0; i < 120 && status !== 402; i++) status = (await poor.post(`/kv/b/k${i}`, "v")).status;
      assert.equal(status, 402);
      const after = await scrape(svc);
      assert.equal(moved(before, after, "credit_api_http_refusals_total", { status: "402" }), 1);
    });

    await t.step(
      "SMTP sessions and replies by code, parse time; a delivery attempt; the outbox",
      async () => {
        const created = await client.postJson("/webhook", { url: `${receiver.url}/hook`, webhookId: "hook" });
        assert.equal(created.status, 200, created.text);
        const before = await scrape(svc);
        const sent = await sendMail(svc, {
          from: "ann@sender.example",
          to: created.json().email,
          subject: "Hi",
          text: "Hello",
        });
        assert.equal(sent.code, 250);
        await receiver.waitFor(1);
        const after = await eventually("the attempt counted", async () => {
          const series = await scrape(svc);
          return moved(before, series, "credit_api_delivery_attempts_total", { outcome: "delivered" }) === 1
            ? series
            : undefined;
        });
        assert.equal(moved(before, after, "credit_api_smtp_sessions_total"), 1);
        assert.equal(
          moved(before, after, "credit_api_smtp_messages_total", { code: "250", outcome: "accepted" }),
          1,
        );
        assert.equal(moved(before, after, "credit_api_smtp_parse_seconds_count"), 1);
        assert.equal(moved(before, after, "credit_api_billed_calls_total", { endpoint: "email" }), 1);
        assert.ok(after.has("credit_api_smtp_parse_queue_depth"));
        assert.ok(after.has('credit_api_outbox_rows{state="due"}'));
        assert.ok(after.has("credit_api_outbox_oldest_due_seconds"));
      },
    );

    await t.step("a failing endpoint: a failed attempt, its webhook paused and counted", async () => {
      const failing = startReceiver(() => new Response("down", { status: 500 }));
      try {
        const hook = await client.postJson("/webhook", { url: `${failing.url}/down`, webhookId: "down" });
        assert.equal(hook.status, 200, hook.text);
        const before = await scrape(svc);
        assert.equal(valueOf(before, "credit_api_webhooks_paused"), 0);
        const sent = await sendMail(svc, {
          from: "ann@sender.example",
          to: hook.json().email,
          subject: "x",
          text: "y",
        });
        assert.equal(sent.code, 250);
        const after = await eventually("the paused webhook counted", async () => {
          const series = await scrape(svc);
          return valueOf(series, "credit_api_webhooks_paused") === 1 ? series : undefined;
        });
        assert.ok(moved(before, after, "credit_api_delivery_attempts_total", { outcome: "failed" }) >= 1);
      } finally {
        await failing.close();
      }
    });

    await t.step("1,000 wallets and 1,000 unmatched paths: the series count stays bounded", async () => {
      // A first round of each kind makes every series those calls can make.
      const drive = async (from: number, to: number) => {
        const work = [];
        for (let i = from; i < to; i++) {
          work.push((async () => {
            const wallet = walletClient(svc, await newToken(svc));
            await wallet.post(`/kv/bucket-${i}/key-${i}`, "v");
            await call(svc, "GET", `/no-such-path-${i}/${crypto.randomUUID()}`, { token: wallet.token });
          })());
          if (work.length === 25) await Promise.all(work.splice(0));
        }
        await Promise.all(work);
      };
      await drive(0, 10);
      const first = await scrape(svc);
      await drive(10, 1000);
      const after = await scrape(svc);
      assert.equal(
        moved(first, after, "credit_api_credits_credited_total", { source: "granted" }),
        990 * 100,
      );
      assert.equal(moved(first, after, "credit_api_http_requests_total", { route: "unmatched" }), 990);
      const grown = [...after.keys()].filter((key) => !first.has(key));
      // Histogram buckets of latencies seen for the first time may appear; nothing per wallet or path.
      assert.ok(grown.length <= 20, `new series: ${grown.join(", ")}`);
      for (const key of after.keys()) {
        assert.doesNotMatch(key, /bucket-\d|key-\d|no-such-path|[0-9a-f]{64}|@/, key);
      }
      assert.ok(after.size < 1500, `${after.size} series`);
    });
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});
