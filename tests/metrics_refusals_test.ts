// The refusals an operator watches, each counted when the service gives it through its real
// interfaces: a 413 body, a 408 from the server's own timeout, a 429 of unknown-token lookups, a
// connection over the per-address bound, and a claim round that passed over an endpoint at its
// share of the delivery slots.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { freePort, startService } from "./helpers/service.ts";
import { scrape, type Series, valueOf } from "./helpers/metrics.ts";
import { openRaw } from "./helpers/raw_http.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { eventually } from "./helpers/wait.ts";

const moved = (before: Series, after: Series, name: string, labels: Record<string, string> = {}) =>
  valueOf(after, name, labels) - valueOf(before, name, labels);

Deno.test("metrics refusals: 413, 408, 429, connections over the bound, fairness throttling", async (t) => {
  const svc = await startService({
    smtp: true,
    env: {
      METRICS_PORT: String(freePort()),
      HTTP_HEADERS_TIMEOUT_MS: "300",
      HTTP_REQUEST_TIMEOUT_MS: "300",
      HTTP_MAX_CONNECTIONS_PER_IP: "4",
      UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE: "1",
      UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
      DELIVERY_SLOTS_PER_ENDPOINT: "1",
    },
  });
  const receiver = startReceiver();
  receiver.reply(receiver.slowly(1_500));
  try {
    const client = walletClient(svc, await newToken(svc));

    await t.step("413 and 429 through the app, 408 from the server's timeout", async () => {
      const before = await scrape(svc);
      assert.equal((await client.post("/kv/b/k", "x".repeat(300 * 1024))).status, 413);
      const unknown = () => call(svc, "GET", "/token", { token: `unknown-${crypto.randomUUID()}` });
      let status = 0;
      for (let i = 0; i < 5 && status !== 429; i++) status = (await unknown()).status;
      assert.equal(status, 429);
      const slow = await openRaw(svc.port);
      await slow.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
      await slow.closed;
      assert.equal(slow.status(), 408, slow.received());
      const after = await scrape(svc);
      assert.equal(moved(before, after, "credit_api_http_refusals_total", { status: "413" }), 1);
      assert.equal(moved(before, after, "credit_api_http_refusals_total", { status: "429" }), 1);
      assert.equal(moved(before, after, "credit_api_http_refusals_total", { status: "408" }), 1);
      assert.equal(
        moved(before, after, "credit_api_http_requests_total", { route: "unmatched", method: "OTHER" }),
        1,
      );
    });

    await t.step("a connection over the per-address bound is counted, the open ones seen", async () => {
      const before = await scrape(svc);
      // The client's keep-alive connections count too: five more are sure to pass the bound of 4.
      const opened = [];
      for (let i = 0; i < 5; i++) opened.push(await openRaw(svc.port));
      // Read before the headers timeout (300 ms) closes the admitted ones.
      const during = await scrape(svc);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const refused = opened.filter((c) => c.isClosed() && /^HTTP\/1\.1 503 /.test(c.received()));
      assert.ok(refused.length >= 1);
      assert.ok(valueOf(during, "credit_api_http_connections_open") >= 5 - refused.length);
      for (const connection of opened) connection.close();
      const after = await scrape(svc);
      assert.equal(
        moved(before, after, "credit_api_http_connections_refused_total", { bound: "per_address" }),
        refused.length,
      );
    });

    await t.step("an endpoint at its share of the delivery slots is passed over, and counted", async () => {
      const hook = await client.postJson("/webhook", { url: `${receiver.url}/slow`, webhookId: "slow" });
      assert.equal(hook.status, 200, hook.text);
      const before = await scrape(svc);
      for (let i = 0; i < 3; i++) {
        const mail = await sendMail(svc, {
          from: "ann@sender.example",
          to: hook.json().email,
          subject: `m${i}`,
          text: "x",
        });
        assert.equal(mail.code, 250);
      }
      await receiver.waitFor(3, 20_000);
      const after = await eventually("the throttling counted", async () => {
        const series = await scrape(svc);
        return moved(before, series, "credit_api_delivery_fairness_throttled_total", { share: "endpoint" }) >=
            1
          ? series
          : undefined;
      });
      assert.equal(
        moved(before, after, "credit_api_delivery_fairness_throttled_total", { share: "wallet" }),
        0,
      );
    });
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});
