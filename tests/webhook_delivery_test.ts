// The delivery worker against local receivers: success, retries with the same webhook-id, final
// 4xx, timeouts, giving up, scheduled runs without retries, a restart with a retry pending, and
// several instances never delivering one row twice.
//
// Emails arrive with issue 4; until then the tests queue deliveries the way the email receiver
// will: a billed command (2 or 5 credits, endpoint `email`) whose decide stores the attachment and
// calls enqueueDelivery in the same transaction. They open the service's database directly for that
// (tests/helpers/database.ts); everything after, the delivery itself, runs in the service process.
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, embedded, type Service, startService } from "./helpers/service.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";
import { withDatabase } from "./helpers/database.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { randomId, sha256Hex } from "../src/ids.ts";
import type { Effect } from "../src/ledger/command.ts";
import {
  type DeliveryContent,
  newDeliveryId,
  newMessageId,
  queueDelivery,
  type QueuedEmail,
} from "../src/webhooks/outbox.ts";
import type { AttachmentRef } from "../src/attachments/signed_link.ts";
import { eventually } from "./helpers/wait.ts";

type Client = ReturnType<typeof walletClient>;

interface Queued {
  client: Client;
  webhookId: string;
  content: DeliveryContent;
  cost: number;
  /** Bytes of an attachment stored with the email. */
  attachment?: Uint8Array;
}

function queuedEmail(webhookId: string, recipient: string, hash: string, subject: string): QueuedEmail {
  return {
    externalMessageId: `<${randomId(12)}@sender.example>`,
    receivedAt: new Date().toISOString(),
    from: { email: "ann@sender.example", name: "Ann" },
    to: { hash },
    webhookId,
    recipient,
    cc: [],
    subject,
    text: `Body of ${subject}`,
    html: "",
    attachments: [],
  };
}

/** An email for `webhookId` as the email receiver will queue it (the webhook must exist). */
async function email(
  client: Client,
  webhookId: string,
  subject: string,
  attachment?: Uint8Array,
): Promise<Queued> {
  const hash = await sha256Hex(client.token);
  const webhook = (await client.get(`/webhook/${webhookId}`)).json();
  const payload = queuedEmail(webhookId, webhook.email ?? "", hash, subject);
  return {
    client,
    webhookId,
    content: { kind: "email", webhookId, payload },
    cost: attachment ? 5 : 2,
    attachment,
  };
}

/** Accepts every queued item in one database session, each as its own billed command. */
async function accept(svc: Service, items: Queued[]): Promise<void> {
  await withDatabase(svc, async (_db, ledger) => {
    for (const item of items) {
      const walletId = await sha256Hex(item.client.token);
      const content = item.content;
      const effects: Effect[] = [];
      if (item.attachment && content.kind === "email") {
        const ref: AttachmentRef = {
          owner: walletId,
          id: randomId(24),
          filename: "report.txt",
          size: item.attachment.byteLength,
          contentType: "text/plain",
        };
        effects.push(
          { type: "storeAttachment", file: { walletId, ...ref, content: item.attachment } } as Effect,
        );
        content.payload.attachments = [ref];
      }
      effects.push(queueDelivery({
        ...content,
        id: newDeliveryId(),
        walletId,
        messageId: newMessageId(),
        cost: item.cost,
      }));
      const result = await ledger.runBilled({
        walletId,
        price: item.cost,
        call: {
          method: "POST",
          path: `/test-harness/${item.webhookId}`,
          endpoint: "email",
          startedAt: performance.now(),
        },
        decide: () => ({ outcome: "queued", log: { status: 200 }, effects }),
        unpaid: () => ({ outcome: "refused", log: { status: 402 } }),
      });
      assert.equal(result.kind, "answered");
    }
  });
}

async function deliveryLogs(client: Client, webhookId: string) {
  const logs = (await client.get("/token/logs?type=webhook-delivery&n=100")).json().logs;
  return logs.filter((l: any) => l.path === webhookId).reverse();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("deliveries: outcomes and retries", async (t) => {
  // Waits of 0.5 ms, 30 ms, 180 ms, 720 ms, 1.8 s and 3.6 s instead of 5 s ... 10 h.
  const svc = await startService({
    env: {
      UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
      DELIVERY_RETRY_SCALE: "0.0001",
      PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET,
    },
  });
  const receivers: Record<string, Receiver> = {};
  const receive = (name: string, reply?: Parameters<typeof startReceiver>[0]) =>
    receivers[name] = startReceiver(reply);
  try {
    const client = walletClient(svc, await newToken(svc));
    // Reading the call log costs a credit per entry; the welcome credits would not last.
    await buyCredits(svc, client.token);
    receive("ok");
    receive("flaky", (_, i) => new Response(i === 0 ? "busy" : "ok", { status: i === 0 ? 503 : 200 }));
    receive(
      "throttled",
      (_, i) => i === 0 ? new Response("slow down", { status: 429 }) : new Response(null, { status: 204 }),
    );
    receive("gone", () => new Response("no such hook", { status: 404 }));
    receive("down", () => new Response("down", { status: 500 }));
    receive("scheduled", () => new Response("down", { status: 503 }));
    receive("deleted");
    receive("slow");
    receivers.slow.reply((request, i) =>
      i === 0 ? receivers.slow.slowly(15_000)(request, i) : new Response("ok")
    );

    const secrets: Record<string, string> = {};
    for (const name of Object.keys(receivers)) {
      const config = name === "ok"
        ? { format: "slack", headers: { Authorization: "Bearer hook-token" } }
        : name === "scheduled"
        ? { schedule: { cron: "0 0 1 1 *", timezone: "UTC" } }
        : {};
      const created = await client.postJson("/webhook", {
        url: `${receivers[name].url}/${name}`,
        webhookId: name,
        ...config,
      });
      assert.equal(created.status, 200, created.text);
      secrets[name] = created.json().secret;
    }
    const hash = await sha256Hex(client.token);
    const scheduledRun: Queued = {
      client,
      webhookId: "scheduled",
      cost: 2,
      content: {
        kind: "scheduled",
        webhookId: "scheduled",
        payload: {
          type: "scheduled_webhook_run",
          webhookId: "scheduled",
          scheduledFor: "2027-01-01T00:00:00.000Z",
          executedAt: new Date().toISOString(),
          walletHash: hash,
        },
      },
    };
    const items = [
      await email(client, "ok", "Quarterly report", new TextEncoder().encode("the report")),
      await email(client, "flaky", "Flaky"),
      await email(client, "throttled", "Throttled"),
      await email(client, "gone", "Gone"),
      await email(client, "down", "Down"),
      await email(client, "deleted", "Deleted"),
      await email(client, "slow", "Slow"),
      scheduledRun,
    ];
    assert.equal((await client.delete("/webhook/deleted")).status, 200);
    await accept(svc, items);

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
          [2, 2, 2, 2, 2, 2, 2, 5],
          "charged when accepted",
        );
      },
    );

    await t.step("the raw payload's attachment links are signed at the attempt and download", async () => {
      const [request] = await receivers.flaky.waitFor(2);
      const body = JSON.parse(request.body);
      assert.deepEqual(body.attachments, []);
      const withFile = await email(client, "flaky", "With a file", new TextEncoder().encode("file body"));
      receivers.flaky.reply(() => new Response("ok"));
      await accept(svc, [withFile]);
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

    await t.step("a scheduled run is not retried; a deleted webhook gets nothing", async () => {
      const [run] = await receivers.scheduled.waitFor(1);
      assert.deepEqual(JSON.parse(run.body), scheduledRun.content.payload);
      new Webhook(secrets.scheduled).verify(run.body, run.headers);
      await sleep(1500);
      assert.equal(receivers.scheduled.received.length, 1);
      assert.equal(receivers.deleted.received.length, 0);
      assert.deepEqual(await deliveryLogs(client, "deleted"), []);
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

    await t.step("the audit stays clean", async () => {
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    });
  } finally {
    for (const receiver of Object.values(receivers)) await receiver.close();
    await svc.dispose();
  }
});

Deno.test("deliveries: a retry pending across a crash and restart still happens", async () => {
  // The real retry schedule: the first retry waits 5 s, long enough to kill and restart the service.
  const svc = await startService({ env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  const receiver = startReceiver(() => new Response("busy", { status: 503 }));
  try {
    const client = walletClient(svc, await newToken(svc));
    const secret =
      (await client.postJson("/webhook", { url: `${receiver.url}/r`, webhookId: "r" })).json().secret;
    await accept(svc, [await email(client, "r", "Survives")]);
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
    new Webhook(secret).verify(second.body, second.headers);
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
    const one = await startService({ env });
    const two = await startService({ env, sharedWith: one });
    // Slow answers keep both workers busy at once, so both claim.
    const receiver = startReceiver(async () => (await sleep(50), new Response("ok")));
    try {
      const client = walletClient(one, await newToken(one));
      await buyCredits(one, client.token);
      await client.postJson("/webhook", { url: `${receiver.url}/m`, webhookId: "m" });
      const items = await Promise.all(Array.from({ length: 40 }, (_, i) => email(client, "m", `Mail ${i}`)));
      await accept(one, items);
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
