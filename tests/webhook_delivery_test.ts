// The delivery worker against local receivers, fed by real mail over SMTP as a sending server would
// send it: success, retries with the same webhook-id, final 4xx, timeouts, giving up, mail to a
// deleted webhook, a webhook deleted with a retry pending, scheduled runs without retries, a restart
// with a retry pending, and several instances never delivering one row twice.
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, embedded, startService } from "./helpers/service.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";
import { sendMail, type SmtpTarget } from "./helpers/smtp.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { sha256Hex } from "../src/ids.ts";
import { eventually } from "./helpers/wait.ts";

type Client = ReturnType<typeof walletClient>;

/** Sends one email to `to` over SMTP and answers the DATA (or refusing RCPT) reply code. */
async function email(svc: SmtpTarget, to: string, subject: string, attachment?: string): Promise<number> {
  const sent = await sendMail(svc, {
    from: "Ann <ann@sender.example>",
    to,
    subject,
    text: `Body of ${subject}`,
    attachments: attachment === undefined
      ? []
      : [{ filename: "report.txt", contentType: "text/plain", content: attachment }],
  });
  return sent.code;
}

/** Sends one email that must be accepted: `250` means it, its attachment and its delivery are committed. */
async function accepted(svc: SmtpTarget, to: string, subject: string, attachment?: string) {
  assert.equal(await email(svc, to, subject, attachment), 250, `mail "${subject}" to ${to}`);
}

async function deliveryLogs(client: Client, webhookId: string) {
  const logs = (await client.get("/token/logs?type=webhook-delivery&n=100")).json().logs;
  return logs.filter((l: any) => l.path === webhookId).reverse();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("deliveries: outcomes and retries", async (t) => {
  // Waits of 0.5 ms, 30 ms, 180 ms, 720 ms, 1.8 s and 3.6 s instead of 5 s ... 10 h.
  const svc = await startService({
    smtp: true,
    env: {
      UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
      DELIVERY_RETRY_SCALE: "0.0001",
      PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET,
    },
  });
  const receivers: Record<string, Receiver> = {};
  const receive = (name: string, reply?: Parameters<typeof startReceiver>[0]) =>
    receivers[name] = startReceiver(reply);
  // The first attempt to "dropped" is held until the test has deleted the webhook.
  let releaseDropped = () => {};
  const droppedHeld = new Promise<void>((resolve) => releaseDropped = resolve);
  try {
    const client = walletClient(svc, await newToken(svc));
    // Reading the call log costs a credit per entry; the welcome credits would not last.
    await buyCredits(svc, client.token);
    // First, so that its first run (on the next minute) comes while the other steps run.
    receive("scheduled", () => new Response("down", { status: 503 }));
    receive("ok");
    receive("flaky", (_, i) => new Response(i === 0 ? "busy" : "ok", { status: i === 0 ? 503 : 200 }));
    receive(
      "throttled",
      (_, i) => i === 0 ? new Response("slow down", { status: 429 }) : new Response(null, { status: 204 }),
    );
    receive("gone", () => new Response("no such hook", { status: 404 }));
    receive("down", () => new Response("down", { status: 500 }));
    receive("deleted");
    receive("dropped", async () => (await droppedHeld, new Response("busy", { status: 503 })));
    receive("slow");
    receivers.slow.reply((request, i) =>
      i === 0 ? receivers.slow.slowly(15_000)(request, i) : new Response("ok")
    );

    const secrets: Record<string, string> = {};
    const mailboxes: Record<string, string> = {};
    for (const name of Object.keys(receivers)) {
      const config = name === "ok"
        ? { format: "slack", headers: { Authorization: "Bearer hook-token" } }
        : name === "scheduled"
        ? { schedule: { cron: "* * * * *", timezone: "UTC" } }
        : {};
      const created = await client.postJson("/webhook", {
        url: `${receivers[name].url}/${name}`,
        webhookId: name,
        ...config,
      });
      assert.equal(created.status, 200, created.text);
      secrets[name] = created.json().secret;
      mailboxes[name] = created.json().email;
    }
    const hash = await sha256Hex(client.token);
    assert.equal((await client.delete("/webhook/deleted")).status, 200);
    await accepted(svc, mailboxes.ok, "Quarterly report", "the report");
    for (const name of ["flaky", "throttled", "gone", "down", "dropped", "slow"]) {
      await accepted(svc, mailboxes[name], name[0].toUpperCase() + name.slice(1));
    }
    assert.equal(await email(svc, mailboxes.deleted, "Deleted"), 550, "a deleted mailbox is refused at RCPT");

    await t.step(
      "success: signed, formatted, custom headers, attachment link, logged with its cost",
      async () => {
        const [request] = await receivers.ok.waitFor(1);
        assert.equal(request.headers["user-agent"], "credit-api/1.0.0");
        assert.equal(request.headers["authorization"], "Bearer hook-token");
        assert.match(request.headers["webhook-id"], /^msg_[A-Za-z0-9]{24}$/);
        const body = new Webhook(secrets.ok).verify(request.body, request.headers) as any;
        assert.ok(
          body.text.startsWith("*Quarterly report*\nFrom: Ann &lt;ann@sender.example&gt;"),
          body.text,
        );
        const [entry] = await eventually("the log entry", async () => {
          const logs = await deliveryLogs(client, "ok");
          return logs.length ? logs : undefined;
        });
        assert.deepEqual(
          [entry.method, entry.path, entry.endpoint, entry.status_code, entry.error, entry.cost],
          ["POST", "ok", "webhook-delivery", 200, undefined, 5],
        );
        const emails = (await client.get("/token/logs?type=email&n=100")).json().logs;
        assert.deepEqual(
          emails.map((l: any) => l.cost).sort(),
          [2, 2, 2, 2, 2, 2, 5],
          "charged when accepted, the refused mail not at all",
        );
      },
    );

    await t.step("the raw payload's attachment links are signed at the attempt and download", async () => {
      const [request] = await receivers.flaky.waitFor(2);
      const body = JSON.parse(request.body);
      assert.deepEqual(body.attachments, []);
      receivers.flaky.reply(() => new Response("ok"));
      await accepted(svc, mailboxes.flaky, "With a file", "file body");
      const [, , third] = await receivers.flaky.waitFor(3);
      const [attachment] = JSON.parse(third.body).attachments;
      assert.deepEqual([attachment.filename, attachment.size, attachment.contentType], [
        "report.txt",
        9,
        "text/plain",
      ]);
      const expiresIn = Date.parse(attachment.downloadUrlExpiresAt) - Date.now();
      assert.ok(expiresIn > 3500_000 && expiresIn <= 3600_000, `link valid for ${expiresIn} ms`);
      const download = await fetch(attachment.downloadUrl);
      assert.deepEqual([download.status, await download.text()], [200, "file body"]);
    });

    await t.step(
      "5xx then success: retried with the same webhook-id, each attempt signed and logged",
      async () => {
        const [first, second] = await receivers.flaky.waitFor(2);
        assert.equal(first.headers["webhook-id"], second.headers["webhook-id"]);
        assert.equal(first.body, second.body);
        new Webhook(secrets.flaky).verify(second.body, second.headers);
        const logs = await eventually("two attempts logged", async () => {
          const logs = await deliveryLogs(client, "flaky");
          return logs.length >= 2 ? logs : undefined;
        });
        assert.deepEqual(logs.slice(0, 2).map((l: any) => [l.status_code, l.error, l.cost]), [
          [503, "HTTP 503 Service Unavailable", 2],
          [200, undefined, 0],
        ]);
        const [a, b] = await receivers.throttled.waitFor(2);
        assert.equal(a.headers["webhook-id"], b.headers["webhook-id"], "429 is retried too");
        const throttled = await eventually("two attempts logged", async () => {
          const logs = await deliveryLogs(client, "throttled");
          return logs.length === 2 ? logs : undefined;
        });
        assert.deepEqual(throttled.map((l: any) => l.status_code), [429, 204], "any 2xx is success");
      },
    );

    await t.step("a 4xx other than 408 and 429 is final: one attempt", async () => {
      await receivers.gone.waitFor(1);
      await sleep(1500);
      assert.equal(receivers.gone.received.length, 1);
      const logs = await deliveryLogs(client, "gone");
      assert.deepEqual(logs.map((l: any) => [l.status_code, l.error, l.cost]), [[
        404,
        "HTTP 404 Not Found",
        2,
      ]]);
    });

    await t.step(
      "mail to a deleted webhook's address is refused: nothing delivered, nothing logged",
      async () => {
        await sleep(500);
        assert.equal(receivers.deleted.received.length, 0);
        assert.deepEqual(await deliveryLogs(client, "deleted"), []);
      },
    );

    await t.step("a webhook deleted while its delivery is pending gets no further attempt", async () => {
      await receivers.dropped.waitFor(1);
      assert.equal((await client.delete("/webhook/dropped")).status, 200);
      releaseDropped();
      const logs = await eventually("the failed attempt logged", async () => {
        const logs = await deliveryLogs(client, "dropped");
        return logs.length ? logs : undefined;
      });
      await sleep(1500);
      assert.equal(receivers.dropped.received.length, 1);
      assert.deepEqual(logs.map((l: any) => [l.status_code, l.cost]), [[503, 2]]);
      assert.equal((await deliveryLogs(client, "dropped")).length, 1);
    });

    await t.step("a timeout is retried", async () => {
      const [first, second] = await receivers.slow.waitFor(2, 20_000);
      assert.ok(second.at - first.at >= 9_500, "the first attempt waited for the 10 s timeout");
      assert.equal(first.headers["webhook-id"], second.headers["webhook-id"]);
      const logs = await eventually("two attempts logged", async () => {
        const logs = await deliveryLogs(client, "slow");
        return logs.length >= 2 ? logs : undefined;
      });
      assert.deepEqual(logs.map((l: any) => [l.status_code, l.error]), [
        [0, "timeout after 10000 ms"],
        [200, undefined],
      ]);
      assert.ok(logs[0].response_time_ms >= 9_900);
    });

    await t.step(
      "a failing receiver gets 7 attempts (first + 6 retries), then the delivery is abandoned",
      async () => {
        await receivers.down.waitFor(7, 20_000);
        await sleep(2000);
        assert.equal(receivers.down.received.length, 7);
        assert.equal(new Set(receivers.down.received.map((r) => r.headers["webhook-id"])).size, 1);
        const logs = await eventually("seven attempts logged", async () => {
          const logs = await deliveryLogs(client, "down");
          return logs.length === 7 ? logs : undefined;
        });
        assert.deepEqual(logs.map((l: any) => l.cost), [2, 0, 0, 0, 0, 0, 0], "charged once, when accepted");
        assert.ok(
          logs.every((l: any) => l.status_code === 500 && l.error === "HTTP 500 Internal Server Error"),
        );
      },
    );

    await t.step(
      "a scheduled run is delivered once and not retried: the next run comes instead",
      async () => {
        // The schedule runs every minute; its first run may still be up to a minute away.
        const [run] = await receivers.scheduled.waitFor(1, 65_000);
        const body = new Webhook(secrets.scheduled).verify(run.body, run.headers) as any;
        assert.deepEqual(Object.keys(body).sort(), [
          "executedAt",
          "scheduledFor",
          "type",
          "walletHash",
          "webhookId",
        ]);
        assert.deepEqual([body.type, body.webhookId, body.walletHash], [
          "scheduled_webhook_run",
          "scheduled",
          hash,
        ]);
        assert.match(body.scheduledFor, /^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/);
        assert.ok(Date.parse(body.executedAt) >= Date.parse(body.scheduledFor));
        await sleep(1500);
        // A retry would repeat the run's webhook-id; later runs (one a minute) each have their own.
        const ids = receivers.scheduled.received.map((r) => r.headers["webhook-id"]);
        assert.equal(new Set(ids).size, ids.length, "each run attempted once");
        const paused = JSON.stringify({ schedule: { active: false } });
        assert.equal((await client.patch("/webhook/scheduled", paused)).status, 200);
      },
    );

    await t.step("the audit stays clean", async () => {
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    });
  } finally {
    releaseDropped();
    for (const receiver of Object.values(receivers)) await receiver.close();
    await svc.dispose();
  }
});

Deno.test("deliveries: a retry pending across a crash and restart still happens", async () => {
  // The real retry schedule: the first retry waits 5 s, long enough to kill and restart the service.
  const svc = await startService({ smtp: true, env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  const receiver = startReceiver(() => new Response("busy", { status: 503 }));
  try {
    const client = walletClient(svc, await newToken(svc));
    const created = (await client.postJson("/webhook", { url: `${receiver.url}/r`, webhookId: "r" })).json();
    await accepted(svc, created.email, "Survives");
    const [first] = await receiver.waitFor(1);
    await eventually(
      "the failed attempt recorded",
      async () => (await deliveryLogs(client, "r")).length ? true : undefined,
    );

    await svc.kill();
    receiver.reply(() => new Response("ok"));
    await svc.start();

    const [, second] = await receiver.waitFor(2, 20_000);
    assert.equal(second.headers["webhook-id"], first.headers["webhook-id"]);
    assert.ok(second.at - first.at >= 4_500, `retried after ${second.at - first.at} ms`);
    new Webhook(created.secret).verify(second.body, second.headers);
    const logs = await eventually("both attempts logged", async () => {
      const logs = await deliveryLogs(client, "r");
      return logs.length === 2 ? logs : undefined;
    });
    assert.deepEqual(logs.map((l: any) => [l.status_code, l.cost]), [[503, 2], [200, 0]]);
    await sleep(1000);
    assert.equal(receiver.received.length, 2);
    const audit = await auditOf(svc);
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});

Deno.test({
  name: "deliveries: two instances on one database deliver each row once",
  ignore: embedded,
  async fn() {
    const env = { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET };
    const one = await startService({ smtp: true, env });
    const two = await startService({ env, sharedWith: one });
    // Slow answers keep both workers busy at once, so both claim.
    const receiver = startReceiver(async () => (await sleep(50), new Response("ok")));
    try {
      const client = walletClient(one, await newToken(one));
      await buyCredits(one, client.token);
      const mailbox =
        (await client.postJson("/webhook", { url: `${receiver.url}/m`, webhookId: "m" })).json().email;
      // Ten senders at a time, as several mail servers would deliver at once.
      for (let batch = 0; batch < 40; batch += 10) {
        await Promise.all(Array.from({ length: 10 }, (_, i) => accepted(one, mailbox, `Mail ${batch + i}`)));
      }
      await receiver.waitFor(40, 30_000);
      await sleep(1500);
      const ids = receiver.received.map((r) => r.headers["webhook-id"]);
      assert.equal(ids.length, 40);
      assert.equal(new Set(ids).size, 40);
      const logs = await eventually("40 attempts logged", async () => {
        const logs = await deliveryLogs(client, "m");
        return logs.length === 40 ? logs : undefined;
      });
      assert.ok(logs.every((l: any) => l.status_code === 200 && l.cost === 2));
      const audit = await auditOf(one);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    } finally {
      await receiver.close();
      await two.dispose();
      await one.dispose();
    }
  },
});
