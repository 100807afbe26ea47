// Low-balance alerts: settings, one alert per episode, a new episode after a recharge, formats,
// signed webhook alerts and emails through the SMTP relay.
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { auditOf, startService } from "./helpers/service.ts";
import { confirmationLinkTo, startRelay } from "./helpers/relay.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { sha256Hex } from "../src/ids.ts";
import { eventually } from "./helpers/wait.ts";

Deno.test({
  name: "low-balance alerts",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const receiver = startReceiver(() => new Response("ok"));
    const relay = await startRelay();
    const svc = await startService({
      env: {
        UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
        PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET,
        SMTP_RELAY_URL: relay.url,
        DELIVERY_RETRY_SCALE: "0.01",
      },
    });
    try {
      const token = await newToken(svc);
      const client = walletClient(svc, token);
      const hash = await sha256Hex(token);
      const put = (value: unknown) =>
        call(svc, "PUT", "/token/settings", { token, body: JSON.stringify(value) });
      const alertMails = () => relay.mails.filter((mail) => !/Subject: Confirm /.test(mail.raw));

      await t.step("a fresh wallet has alerts off; GET costs 1", async () => {
        const res = await client.get("/token/settings");
        assert.equal(res.status, 200);
        assert.deepEqual(res.json(), { low_balance_threshold: 0 });
        assert.deepEqual([res.cost, res.balance], [1, 99]);
      });

      await t.step("bad settings are 400, charged, and change nothing", async () => {
        const cases: [unknown, RegExp][] = [
          [
            { low_balance_threshold: -1 },
            /^Invalid low_balance_threshold: must be an integer of at least 0$/,
          ],
          [{ low_balance_threshold: 1.5 }, /^Invalid low_balance_threshold: /],
          [{ low_balance_threshold: "10" }, /^Invalid low_balance_threshold: /],
          [{ low_balance_email: "not-an-address" }, /^Invalid low_balance_email: must be an email address$/],
          [{ low_balance_webhook: { url: "ftp://example.com/x" } }, /^Invalid low_balance_webhook.url: /],
          [{ low_balance_webhook: { url: "https://example.com", format: "custom" } }, /template: required/],
          [{ low_balance_webhook: { url: "https://example.com", format: "telegram" } }, /chat_id: required/],
          [
            { low_balance_webhook: { url: "https://example.com", format: "pager" } },
            /format: must be one of/,
          ],
          [{ low_balance_threshold: 5, extra: true }, /^Unknown field: extra$/],
          ["[1, 2]", /^Invalid request: /],
        ];
        for (const [body, phrase] of cases) {
          const res = await call(svc, "PUT", "/token/settings", {
            token,
            body: typeof body === "string" ? body : JSON.stringify(body),
          });
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.match(res.text, phrase);
          assert.equal(res.cost, 1);
        }
        assert.deepEqual((await client.get("/token/settings")).json(), { low_balance_threshold: 0 });
      });

      let secret = "";
      await t.step("PUT stores the settings; GET redacts secrets but shows the signing key", async () => {
        const balance = (await client.get("/token")).json().wallet;
        const res = await put({
          low_balance_threshold: balance - 3,
          low_balance_webhook: {
            url: `${receiver.url}/alerts`,
            headers: { Authorization: "Bearer s3cret" },
            options: { api_key: "k", channel: "ops" },
          },
          low_balance_email: "owner@example.com",
        });
        assert.deepEqual([res.status, res.text, res.cost], [200, "OK", 1]);
        const view = (await client.get("/token/settings")).json();
        assert.equal(view.low_balance_threshold, balance - 3);
        assert.equal(view.low_balance_email, "owner@example.com");
        assert.equal(view.low_balance_email_confirmed, false);
        // Alerts go to the address once confirmed from the link mailed to it (alert_email_confirmation_test.ts).
        const confirmed = await call(svc, "POST", await confirmationLinkTo(relay, "owner@example.com"));
        assert.equal(confirmed.status, 200, confirmed.text);
        assert.deepEqual(view.low_balance_webhook.headers, { Authorization: "***" });
        assert.deepEqual(view.low_balance_webhook.options, { api_key: "***", channel: "ops" });
        assert.match(view.low_balance_webhook.secret, /^whsec_/);
        secret = view.low_balance_webhook.secret;
        assert.equal(receiver.received.length, 0, "not below the threshold yet");
      });

      await t.step("the debit that crosses the threshold sends one signed alert and one email", async () => {
        const settings = (await client.get("/token/settings")).json();
        let last = (await client.get("/kv/b/k")).balance!;
        while (last >= settings.low_balance_threshold) last = (await client.get("/kv/b/k")).balance!;
        const [alert] = await receiver.waitFor(1);
        assert.equal(alert.path, "/alerts");
        assert.equal(alert.headers.authorization, "Bearer s3cret");
        assert.deepEqual(JSON.parse(alert.body), {
          wallet: last,
          threshold: settings.low_balance_threshold,
          token_hash: hash,
        });
        new Webhook(secret).verify(alert.body, alert.headers);
        await eventually("the alert email", () => alertMails().length === 1 || undefined);
        assert.deepEqual(alertMails()[0].to, ["owner@example.com"]);
        assert.match(alertMails()[0].raw, /Subject: Low balance: \d+ credits left/);
        assert.match(
          alertMails()[0].raw.replace(/=\r?\n/g, ""),
          new RegExp(hash),
          "quoted-printable soft breaks removed",
        );
      });

      await t.step("no second alert within the episode", async () => {
        for (let i = 0; i < 5; i++) await client.get("/kv/b/k");
        await new Promise((r) => setTimeout(r, 1500));
        assert.equal(receiver.received.length, 1);
        assert.equal(alertMails().length, 1);
        const logs = (await client.get("/token/logs?type=webhook-delivery&n=10")).json().logs;
        assert.deepEqual(logs.map((l: any) => [l.path, l.status_code]).sort(), [
          ["@alert-email-confirmation", 250],
          ["@low-balance", 200],
          ["@low-balance-email", 250],
        ]);
      });

      await t.step(
        "after a recharge the balance is above the threshold: a new episode alerts again",
        async () => {
          await buyCredits(svc, token);
          const balance = (await client.get("/token")).json().wallet;
          const settings = (await client.get("/token/settings")).json();
          await put({
            ...settings,
            low_balance_threshold: balance - 3,
            low_balance_webhook: {
              url: `${receiver.url}/alerts`,
              headers: { Authorization: "Bearer s3cret" },
            },
          });
          assert.equal(receiver.received.length, 1);
          for (let i = 0; i < 4; i++) await client.get("/kv/b/k");
          const [, second] = await receiver.waitFor(2);
          assert.equal(JSON.parse(second.body).threshold, balance - 3);
          assert.equal(
            (await client.get("/token/settings")).json().low_balance_webhook.secret,
            secret,
            "the signing key survives a PUT",
          );
        },
      );

      await t.step("each format renders the alert", async () => {
        const formats: [Record<string, unknown>, (body: any, hash: string) => void][] = [
          [{ format: "slack" }, (b) => assert.match(b.text, /^\*Low balance: \d+ credits left\*/)],
          [{ format: "discord" }, (b) => assert.match(b.content, /^\*\*Low balance/)],
          [
            { format: "teams" },
            (b) => assert.equal(b.attachments[0].contentType, "application/vnd.microsoft.card.adaptive"),
          ],
          [{ format: "telegram", options: { chat_id: "-100123" } }, (b) => assert.equal(b.chat_id, -100123)],
          [{ format: "pagerduty", options: { routing_key: "rk" } }, (b) => {
            assert.equal(b.event_action, "trigger");
            assert.match(b.payload.summary, /^Low balance/);
          }],
          [
            {
              format: "custom",
              template: { w: "{{wallet}}", t: "{{threshold}}", text: "{{token_hash}} at {{wallet}}" },
            },
            (b, h) => {
              assert.equal(typeof b.w, "number");
              assert.equal(b.t, 98);
              assert.match(b.text, new RegExp(`^${h} at \\d+$`));
            },
          ],
        ];
        for (const [webhook, check] of formats) {
          const formatToken = await newToken(svc);
          const before = receiver.received.length;
          const res = await call(svc, "PUT", "/token/settings", {
            token: formatToken,
            body: JSON.stringify({
              low_balance_threshold: 98,
              low_balance_webhook: { url: receiver.url, ...webhook },
            }),
          });
          assert.equal(res.status, 200, res.text);
          await walletClient(svc, formatToken).get("/kv/b/k"); // 98 -> not below
          await walletClient(svc, formatToken).get("/kv/b/k"); // 97 -> below
          const received = await receiver.waitFor(before + 1);
          check(JSON.parse(received[before].body), await sha256Hex(formatToken));
        }
      });

      await t.step("the audit is clean", async () => {
        const audit = await auditOf(svc);
        assert.equal(audit.code, 0, audit.stdout);
      });
    } finally {
      await svc.dispose();
      await relay.close();
      await receiver.close();
    }
  },
});

Deno.test("without SMTP_RELAY_URL the confirmation email is recorded as not sent", async () => {
  const svc = await startService();
  try {
    const token = await newToken(svc);
    const client = walletClient(svc, token);
    await call(svc, "PUT", "/token/settings", {
      token,
      body: JSON.stringify({ low_balance_threshold: 99, low_balance_email: "owner@example.com" }),
    });
    let entry: any;
    for (let i = 0; i < 100 && !entry; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const logs = (await client.get("/token/logs?type=webhook-delivery")).json().logs;
      entry = logs.find((l: any) => l.path === "@alert-email-confirmation");
    }
    assert.ok(entry, "the confirmation attempt is in the call log");
    assert.equal(entry.error, "not sent: SMTP_RELAY_URL is not set");
    assert.equal((await client.get("/token/settings")).json().low_balance_email_confirmed, false);
  } finally {
    await svc.dispose();
  }
});
