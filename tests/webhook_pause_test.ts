// Endpoint health through real SMTP, a local receiver and an SMTP relay (issue 13): a mailbox
// webhook whose endpoint keeps failing sends one "failing" alert at 5 failures, then pauses itself
// (WEBHOOK_PAUSE_AFTER_FAILURES, WEBHOOK_PAUSE_AFTER_HOURS) with its alert through the wallet's
// alert webhook and email; mail is still accepted and charged while it waits as `paused`; resuming
// sends it, oldest first. Pausing by hand, and the refusals. Nothing charged twice, audit and replay clean.
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { auditOf, replayOf, startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { confirmationLinkTo, mailText, startRelay } from "./helpers/relay.ts";
import { sendMail, type SmtpTarget } from "./helpers/smtp.ts";
import { sha256Hex } from "../src/ids.ts";
import { eventually } from "./helpers/wait.ts";

async function accepted(svc: SmtpTarget, to: string, subject: string) {
  const sent = await sendMail(svc, {
    from: "Ann <ann@sender.example>",
    to,
    subject,
    text: `Body of ${subject}`,
  });
  assert.equal(sent.code, 250, `mail "${subject}" to ${to}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test({
  name: "webhook pause: by threshold with its alerts, mail waits, resume sends it",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const endpoint = startReceiver(() => new Response("maintenance", { status: 503 }));
    const alerts = startReceiver(() => new Response("noted"));
    const relay = await startRelay();
    // Paused after 6 failed attempts, whatever their age (two mails: neither runs out of its 7
    // attempts first); retries 0.1 ms ... 0.72 s apart.
    const svc = await startService({
      smtp: true,
      env: {
        UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
        DELIVERY_RETRY_SCALE: "0.00002",
        WEBHOOK_PAUSE_AFTER_FAILURES: "6",
        WEBHOOK_PAUSE_AFTER_HOURS: "0",
        SMTP_RELAY_URL: relay.url,
      },
    });
    try {
      const token = await newToken(svc);
      const client = walletClient(svc, token);
      const hash = await sha256Hex(token);
      // The wallet's alert channel: the low-balance settings' webhook and email (threshold off).
      const settings = await call(svc, "PUT", "/token/settings", {
        token,
        body: JSON.stringify({
          low_balance_threshold: 0,
          low_balance_webhook: { url: `${alerts.url}/alerts` },
          low_balance_email: "owner@example.com",
        }),
      });
      assert.equal(settings.status, 200, settings.text);
      // Alerts go to an address only once confirmed from the link mailed to it.
      const confirmed = await call(svc, "POST", await confirmationLinkTo(relay, "owner@example.com"));
      assert.equal(confirmed.status, 200, confirmed.text);
      const alertMails = () => relay.mails.filter((mail) => !/Subject: Confirm /.test(mail.raw));
      const alertSecret = (await client.get("/token/settings")).json().low_balance_webhook.secret;
      const created = await client.postJson("/webhook", { url: `${endpoint.url}/inbox`, webhookId: "inbox" });
      const hook = created.json();
      assert.deepEqual([hook.active, hook.pausedReason], [true, undefined]);

      await t.step('five failures in a row send one "failing" alert to each target', async () => {
        await accepted(svc, hook.email, "One");
        await accepted(svc, hook.email, "Two");
        const [alert] = await alerts.waitFor(1, 20_000);
        const body = new Webhook(alertSecret).verify(alert.body, alert.headers) as any;
        assert.deepEqual(
          [body.type, body.webhookId, body.failures, body.lastStatus, body.lastError, body.token_hash],
          ["webhook.failing", "inbox", 5, 503, "HTTP 503 Service Unavailable", hash],
        );
        assert.match(body.text, /The last 5 attempts to webhook "inbox" failed/);
        await eventually("the failing alert email", () => alertMails().length >= 1 || undefined);
        const failing = mailText(alertMails()[0]);
        assert.match(failing, /Subject: Webhook inbox is failing\r\n/);
        assert.match(
          failing,
          /The last 5 attempts to webhook "inbox" failed, since .*\. Last answer: HTTP 503 Service Unavailable\./,
        );
      });

      await t.step("at the threshold it pauses itself, with its alert; no further attempt", async () => {
        const [, paused] = await alerts.waitFor(2, 20_000);
        const body = new Webhook(alertSecret).verify(paused.body, paused.headers) as any;
        assert.deepEqual([body.type, body.failures, body.resume], [
          "webhook.paused",
          6,
          'PATCH /webhook/inbox with {"active": true}',
        ]);
        await eventually("the paused alert email", () => alertMails().length >= 2 || undefined);
        const text = mailText(alertMails()[1]);
        assert.match(text, /Subject: Webhook inbox was paused, its endpoint keeps failing\r\n/);
        assert.match(text, /Webhook "inbox" was paused after 6 failed attempts in a row since /);
        assert.match(text, /resume it: PATCH \/webhook\/inbox with \{"active": true\}/);
        assert.deepEqual(alertMails().map((m) => m.to), [["owner@example.com"], ["owner@example.com"]]);
        const view = (await client.get("/webhook/inbox")).json();
        assert.deepEqual([view.active, view.pausedReason], [false, "endpoint failing"]);
        assert.ok(Date.parse(view.pausedAt) <= Date.now());
        // An attempt in flight when it paused is recorded, and waits too.
        await sleep(300);
        const sent = endpoint.received.length;
        assert.ok(sent === 6 || sent === 7, `${sent} attempts`);
        await sleep(1500);
        assert.equal(endpoint.received.length, sent, "nothing sent while paused");
        const list = (await client.get("/webhook/inbox/deliveries")).json().deliveries;
        assert.deepEqual(list.map((d: any) => [d.status, d.nextAttemptAt]), [["paused", null], [
          "paused",
          null,
        ]]);
        assert.equal(alerts.received.length, 2, "one alert per kind and episode");
      });

      let attempted = 0;
      await t.step("mail to a paused webhook is accepted, charged, and waits as paused", async () => {
        attempted = endpoint.received.length;
        const before = (await client.get("/token")).balance!;
        await accepted(svc, hook.email, "Three");
        assert.equal((await client.get("/token")).balance, before - 1 - 2, "the email's 2 credits, once");
        const list = (await client.get("/webhook/inbox/deliveries?status=paused")).json().deliveries;
        assert.equal(list.length, 3);
        assert.deepEqual(
          (await client.get("/webhook/inbox/deliveries?status=pending")).json().deliveries,
          [],
        );
        await sleep(500);
        assert.equal(endpoint.received.length, attempted);
      });

      await t.step("resuming sends what waited, oldest first, and ends the pause", async () => {
        endpoint.reply(() => new Response("ok"));
        const resumed = await client.patch("/webhook/inbox", JSON.stringify({ active: true }));
        assert.deepEqual([resumed.status, resumed.cost], [200, 1]);
        assert.deepEqual([resumed.json().active, resumed.json().pausedReason], [true, undefined]);
        await endpoint.waitFor(attempted + 3);
        const delivered = await eventually("all three delivered", async () => {
          const list = (await client.get("/webhook/inbox/deliveries")).json().deliveries;
          return list.every((d: any) => d.status === "delivered") ? list : undefined;
        });
        // The worker took them oldest first: each one's last attempt started no earlier than the one before.
        const oldestFirst = [...delivered].reverse();
        const starts = oldestFirst.map((d: any) => Date.parse(d.attempts.at(-1).at));
        assert.deepEqual([...starts].sort((a, b) => a - b), starts);
        const subjects = endpoint.received.slice(attempted).map((r) => JSON.parse(r.body).subject).sort();
        assert.deepEqual(subjects, ["One", "Three", "Two"], "each once");
      });

      await t.step(
        "paused by hand: reason, mail waits, resumed; active on a schedule is refused",
        async () => {
          const paused = await client.patch("/webhook/inbox", JSON.stringify({ active: false }));
          assert.deepEqual([paused.status, paused.json().active, paused.json().pausedReason], [
            200,
            false,
            "paused by owner",
          ]);
          await accepted(svc, hook.email, "Four");
          await sleep(500);
          assert.equal(endpoint.received.length, attempted + 3);
          const both = await client.patch(
            "/webhook/inbox",
            JSON.stringify({ active: true, format: "slack" }),
          );
          assert.deepEqual([both.json().active, both.json().format], [true, "slack"]);
          const last = (await endpoint.waitFor(attempted + 4)).at(-1)!;
          assert.match(JSON.parse(last.body).text, /^\*Four\*/);
          const job = await client.postJson("/webhook", {
            url: `${endpoint.url}/job`,
            webhookId: "job",
            schedule: { cron: "0 0 1 1 *", timezone: "UTC" },
          });
          assert.equal(job.json().active, undefined, "a schedule pauses with schedule.active");
          const refused = await client.patch("/webhook/job", JSON.stringify({ active: false }));
          assert.deepEqual([refused.status, refused.text, refused.cost], [
            400,
            "Invalid active: a scheduled webhook pauses with schedule.active",
            1,
          ]);
          const bad = await client.patch("/webhook/inbox", JSON.stringify({ active: "no" }));
          assert.deepEqual([bad.status, bad.text], [400, "Invalid active: must be true or false"]);
        },
      );

      await t.step("every email charged once; audit and replay clean", async () => {
        const emails = (await client.get("/token/logs?type=email&n=20")).json().logs;
        assert.deepEqual(emails.map((l: any) => l.cost), [2, 2, 2, 2]);
        const audit = await auditOf(svc);
        assert.equal(audit.code, 0, audit.stdout + audit.stderr);
        const replay = await replayOf(svc);
        assert.equal(replay.code, 0, replay.stdout + replay.stderr);
      });
    } finally {
      await endpoint.close();
      await alerts.close();
      await relay.close();
      await svc.dispose();
    }
  },
});
