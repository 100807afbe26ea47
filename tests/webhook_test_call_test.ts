// POST /webhook/<id>/test end to end against a local receiver: every format's body, the Standard
// Webhooks signature, the sample attachment behind its signed link, failures answered as 200, and
// the delivery-time SSRF check.
import assert from "node:assert/strict";
import { lookup } from "node:dns/promises";
import { Webhook } from "standardwebhooks";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { auditOf, startService } from "./helpers/service.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";
import { sha256Hex } from "../src/ids.ts";
import { signedAttachmentLink } from "../src/attachments/signed_link.ts";
import { SAMPLE_ATTACHMENT_REF } from "../src/attachments/sample_pdf.ts";
import { isPublicAddress } from "../src/webhooks/url_safety.ts";

const SERVER_SECRET = "test-server-secret-0123456789";
const HOUR = 3600 * 1000;

type Client = ReturnType<typeof walletClient>;

/** Creates a webhook pointing at the receiver and runs its test; returns the request received. */
async function testThrough(client: Client, receiver: Receiver, config: Record<string, unknown>) {
  const webhookId = `w${crypto.randomUUID().slice(0, 8)}`;
  const created = await client.postJson("/webhook", { url: `${receiver.url}/hook`, webhookId, ...config });
  assert.equal(created.status, 200, created.text);
  const before = receiver.received.length;
  const test = await client.post(`/webhook/${webhookId}/test`);
  assert.equal(test.status, 200);
  assert.deepEqual(test.json(), { success: true, message: "test webhook delivered" });
  assert.equal(receiver.received.length, before + 1);
  const request = receiver.received[before];
  return { request, body: JSON.parse(request.body), secret: created.json().secret as string, webhookId };
}

Deno.test("test deliveries", async (t) => {
  const svc = await startService({ env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", SERVER_SECRET } });
  const receiver = startReceiver();
  try {
    const token = await newToken(svc);
    const client = walletClient(svc, token);
    const hash = await sha256Hex(token);

    await t.step("the service warns at start that private webhooks are allowed", () => {
      assert.match(svc.output(), /"level":"warn".*UNSAFE_ALLOW_PRIVATE_WEBHOOKS is on/);
    });

    await t.step("no format: the test email payload, signed, with the custom headers", async () => {
      const startedAt = Date.now();
      const { request, body, secret, webhookId } = await testThrough(client, receiver, {
        headers: { Authorization: "Bearer s3cret", "X-Trace": "t-1" },
      });
      assert.equal(request.method, "POST");
      assert.equal(request.path, "/hook");
      assert.equal(request.headers["content-type"], "application/json");
      assert.equal(request.headers["user-agent"], "credit-api/1.0.0");
      assert.equal(
        request.headers["authorization"],
        "Bearer s3cret",
        "custom header values are sent in clear",
      );
      assert.equal(request.headers["x-trace"], "t-1");
      assert.match(request.headers["webhook-id"], /^test_[A-Za-z0-9]+$/);
      const verified = new Webhook(secret).verify(request.body, request.headers);
      assert.deepEqual(verified, body);
      assert.throws(() => new Webhook(secret).verify(request.body + " ", request.headers));

      const webhook = (await client.get(`/webhook/${webhookId}`)).json();
      assert.deepEqual(Object.keys(body).sort(), [
        "attachments",
        "cc",
        "externalMessageId",
        "from",
        "html",
        "receivedAt",
        "recipient",
        "subject",
        "text",
        "to",
        "webhookId",
      ]);
      assert.deepEqual(body.to, { hash });
      assert.equal(body.webhookId, webhookId);
      assert.equal(body.recipient, webhook.email);
      assert.deepEqual(body.from, { email: "test@mail.localhost", name: "Webhook Test" });
      assert.equal(body.subject, "Test webhook");
      assert.ok(body.text.length > 0 && body.html.startsWith("<p>"));
      assert.match(body.externalMessageId, /^<test-[a-z0-9]+@mail\.localhost>$/);
      assert.ok(Math.abs(Date.parse(body.receivedAt) - startedAt) < 60_000);
      assert.equal(body.attachments.length, 1);
      const [attachment] = body.attachments;
      assert.deepEqual(
        [attachment.filename, attachment.contentType, attachment.size],
        ["test-attachment.pdf", "application/pdf", SAMPLE_ATTACHMENT_REF.size],
      );
      const expiresIn = Date.parse(attachment.downloadUrlExpiresAt) - startedAt;
      assert.ok(expiresIn > HOUR - 60_000 && expiresIn <= HOUR + 1000, `link valid for ${expiresIn} ms`);
      assert.ok(attachment.downloadUrl.startsWith(`${svc.url}/attachments/`));

      const download = await fetch(attachment.downloadUrl);
      assert.equal(download.status, 200);
      assert.equal(download.headers.get("content-type"), "application/pdf");
      assert.match(
        download.headers.get("content-disposition")!,
        /^attachment; filename="test-attachment\.pdf"/,
      );
      assert.equal(download.headers.get("x-content-type-options"), "nosniff");
      const bytes = await download.bytes();
      assert.equal(bytes.byteLength, attachment.size);
      const pdf = new TextDecoder().decode(bytes);
      assert.ok(pdf.startsWith("%PDF-1.4") && pdf.trimEnd().endsWith("%%EOF"));
    });

    await t.step("a tampered or expired link is 403; a valid link to nothing is 404", async () => {
      const { body } = await testThrough(client, receiver, {});
      const link = new URL(body.attachments[0].downloadUrl);
      const sig = link.searchParams.get("sig")!;
      const variants: [string, (url: URL) => void][] = [
        [
          "signature changed",
          (url) => url.searchParams.set("sig", (sig[0] === "A" ? "B" : "A") + sig.slice(1)),
        ],
        [
          "expiry moved",
          (url) => url.searchParams.set("expires", String(Number(url.searchParams.get("expires")) + 3600)),
        ],
        ["other file", (url) => url.pathname = url.pathname.replace(/[^/]+$/, "other-file")],
        ["other owner", (url) => url.pathname = url.pathname.replace("/service/", `/${hash}/`)],
        ["no signature", (url) => url.searchParams.delete("sig")],
        ["no expiry", (url) => url.searchParams.delete("expires")],
      ];
      for (const [what, change] of variants) {
        const url = new URL(link);
        change(url);
        const answer = await fetch(url);
        assert.deepEqual([answer.status, await answer.text()], [403, "Invalid download link"], what);
      }
      const expired = signedAttachmentLink(
        SERVER_SECRET,
        { publicUrl: svc.url, ref: SAMPLE_ATTACHMENT_REF, now: new Date(Date.now() - 2 * HOUR) },
      );
      const late = await fetch(expired.downloadUrl);
      assert.deepEqual([late.status, await late.text()], [403, "Download link expired"]);
      const nothing = signedAttachmentLink(
        SERVER_SECRET,
        { publicUrl: svc.url, ref: { ...SAMPLE_ATTACHMENT_REF, id: "no-such-file" }, now: new Date() },
      );
      const missing = await fetch(nothing.downloadUrl);
      assert.deepEqual([missing.status, await missing.text()], [404, "Attachment not found"]);
      assert.equal((await fetch(link)).status, 200, "the genuine link still works");
    });

    await t.step("each format's body, end to end", async () => {
      const slack = (await testThrough(client, receiver, { format: "slack" })).body;
      assert.deepEqual(Object.keys(slack), ["text"]);
      assert.ok(
        slack.text.startsWith("*Test webhook*\nFrom: Webhook Test &lt;test@mail.localhost&gt;\n\n"),
        slack.text,
      );

      const discord = (await testThrough(client, receiver, { format: "discord" })).body;
      assert.equal(typeof discord.content, "string");
      assert.ok(discord.content.includes("Test webhook") && discord.content.length <= 2000);

      const teams = (await testThrough(client, receiver, { format: "teams" })).body;
      assert.equal(teams.type, "message");
      assert.equal(teams.attachments[0].contentType, "application/vnd.microsoft.card.adaptive");
      assert.equal(teams.attachments[0].content.type, "AdaptiveCard");
      assert.ok(JSON.stringify(teams).includes("Test webhook"));

      const telegram = (await testThrough(client, receiver, {
        format: "telegram",
        options: { chat_id: "-1001234567890" },
      })).body;
      assert.equal(telegram.chat_id, -1001234567890);
      assert.equal(telegram.parse_mode, "HTML");
      assert.ok(
        telegram.text.startsWith("<b>Test webhook</b>\nFrom: Webhook Test &lt;test@mail.localhost&gt;"),
      );

      const pagerduty = (await testThrough(client, receiver, {
        format: "pagerduty",
        options: { routing_key: "R0UTING-KEY-32-characters-long!!", severity: "warning" },
      })).body;
      assert.equal(
        pagerduty.routing_key,
        "R0UTING-KEY-32-characters-long!!",
        "the real key is sent, only reads redact it",
      );
      assert.equal(pagerduty.event_action, "trigger");
      assert.match(pagerduty.dedup_key, /^<test-/);
      assert.deepEqual(
        [pagerduty.payload.summary, pagerduty.payload.source, pagerduty.payload.severity],
        ["Test webhook", "test@mail.localhost", "warning"],
      );
      assert.equal(pagerduty.payload.custom_details.from_name, "Webhook Test");

      const custom = (await testThrough(client, receiver, {
        format: "custom",
        template: {
          title: "{{subject}}",
          line: "Mail from {{from.name}}: {{subject}}",
          file: "{{attachments[0].filename}}",
          size: "{{attachments[-1].size}}",
          sender: "{{from.missing|from.email}}",
          fallback: '{{nope|"none"}}',
          missing: "{{nothing.here}}",
          nested: { list: ["{{to.hash}}", 1, true, null] },
        },
      })).body;
      assert.deepEqual(custom, {
        title: "Test webhook",
        line: "Mail from Webhook Test: Test webhook",
        file: "test-attachment.pdf",
        size: SAMPLE_ATTACHMENT_REF.size,
        sender: "test@mail.localhost",
        fallback: "none",
        missing: "",
        nested: { list: [hash, 1, true, null] },
      });
    });

    await t.step("includeAttachments false sends no attachments", async () => {
      const { body } = await testThrough(client, receiver, { includeAttachments: false });
      assert.deepEqual(body.attachments, []);
    });

    await t.step("a scheduled webhook gets a scheduled-run payload", async () => {
      const { body, webhookId, request, secret } = await testThrough(client, receiver, {
        schedule: { cron: "0 8 * * *", timezone: "Asia/Tokyo" },
      });
      assert.deepEqual(Object.keys(body).sort(), [
        "executedAt",
        "scheduledFor",
        "type",
        "walletHash",
        "webhookId",
      ]);
      assert.deepEqual([body.type, body.webhookId, body.walletHash], [
        "scheduled_webhook_run",
        webhookId,
        hash,
      ]);
      assert.ok(!Number.isNaN(Date.parse(body.scheduledFor)) && !Number.isNaN(Date.parse(body.executedAt)));
      new Webhook(secret).verify(request.body, request.headers);
    });

    await t.step("the single-webhook POST /webhook/test tests `default`", async () => {
      await client.postJson("/webhook", { url: `${receiver.url}/default` });
      const before = receiver.received.length;
      const test = await client.post("/webhook/test");
      assert.deepEqual([test.status, test.json().success, test.cost], [200, true, 1]);
      assert.equal(receiver.received[before].path, "/default");
    });

    await t.step("failures answer 200 with the reason; 1 credit; the log keeps the reason", async () => {
      const failing = startReceiver();
      try {
        const url = `${failing.url}/x`;
        const cases: [() => Response, string][] = [
          [() => new Response("no", { status: 500 }), "webhook call failed: HTTP 500 Internal Server Error"],
          [() => new Response("no", { status: 404 }), "webhook call failed: HTTP 404 Not Found"],
          [() => new Response("no", { status: 429 }), "webhook call failed: HTTP 429 Too Many Requests"],
          [
            () => new Response(null, { status: 302, headers: { location: "http://169.254.169.254/" } }),
            "webhook call failed: redirect to http://169.254.169.254/ not followed",
          ],
        ];
        await client.postJson("/webhook", { url, webhookId: "failing" });
        for (const [reply, message] of cases) {
          failing.reply(reply);
          const test = await client.post("/webhook/failing/test");
          assert.deepEqual([test.status, test.json(), test.cost], [200, { success: false, message }, 1]);
        }
        assert.equal(failing.received.length, cases.length, "one attempt each, no retries");
        const [entry] = (await client.get("/token/logs?type=webhook&n=1")).json().logs;
        assert.deepEqual([entry.path, entry.status_code, entry.error], [
          "/webhook/failing/test",
          200,
          cases.at(-1)![1],
        ]);
      } finally {
        await failing.close();
      }
      const closed = startReceiver();
      const closedUrl = `${closed.url}/x`;
      await closed.close();
      await client.postJson("/webhook", { url: closedUrl, webhookId: "closed" });
      const refused = await client.post("/webhook/closed/test");
      assert.deepEqual(refused.json(), {
        success: false,
        message: "webhook call failed: connection refused",
      });
    });

    await t.step("a receiver slower than 10 s is a timeout, answered within about 10 s", async () => {
      const slow = startReceiver();
      slow.reply(slow.slowly(15_000));
      try {
        await client.postJson("/webhook", { url: `${slow.url}/slow`, webhookId: "slow" });
        const started = performance.now();
        const test = await client.post("/webhook/slow/test");
        const seconds = (performance.now() - started) / 1000;
        assert.deepEqual(test.json(), {
          success: false,
          message: "webhook call failed: timeout after 10000 ms",
        });
        assert.ok(seconds >= 9.5 && seconds < 13, `answered after ${seconds} s`);
      } finally {
        await slow.close();
      }
    });

    await t.step("an empty wallet gets 402 and nothing is sent", async () => {
      const poor = walletClient(svc, await newToken(svc));
      await poor.postJson("/webhook", { url: `${receiver.url}/poor` });
      for (let i = 0; i < 9; i++) await Promise.all(Array.from({ length: 11 }, () => poor.get("/webhook")));
      const before = receiver.received.length;
      const test = await poor.post("/webhook/test");
      assert.deepEqual([test.status, test.text, test.cost, test.balance], [
        402,
        "Insufficient credits",
        0,
        0,
      ]);
      assert.equal(receiver.received.length, before);
    });

    await t.step("a replayed Idempotency-Key answers again without sending again", async () => {
      await client.postJson("/webhook", { url: `${receiver.url}/idem`, webhookId: "idem" });
      const key = { "idempotency-key": "test-once" };
      const first = await client.post("/webhook/idem/test", undefined, key);
      const count = receiver.received.length;
      const again = await client.post("/webhook/idem/test", undefined, key);
      assert.deepEqual([again.status, again.text, again.headers.get("idempotent-replayed")], [
        200,
        first.text,
        "true",
      ]);
      assert.equal(receiver.received.length, count);
    });

    await t.step("the audit stays clean", async () => {
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    });
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});

Deno.test("a generated server secret survives restarts", async () => {
  const svc = await startService({ env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  const receiver = startReceiver();
  try {
    const client = walletClient(svc, await newToken(svc));
    await client.postJson("/webhook", { url: receiver.url });
    assert.equal((await client.post("/webhook/test")).json().success, true);
    const link = JSON.parse(receiver.received[0].body).attachments[0].downloadUrl;
    assert.equal(await fetch(link).then(async (r) => (await r.body?.cancel(), r.status)), 200);
    await svc.stop();
    await svc.start();
    const after = await fetch(link);
    assert.equal(after.status, 200);
    await after.body?.cancel();
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});

// A name that the system resolver (hosts file included) maps to a non-public address. No DNS is
// needed: the machine's own host name normally resolves to loopback or a private address.
async function privateName(): Promise<string | undefined> {
  const name = Deno.hostname();
  try {
    const addresses = await lookup(name, { all: true });
    if (addresses.length > 0 && addresses.every((a) => !isPublicAddress(a.address))) return name;
  } catch { /* not resolvable here */ }
  return undefined;
}

Deno.test("SSRF at delivery: a public-looking name resolving to a private address is refused", async (t) => {
  const name = await privateName();
  if (!name) {
    console.log(`skipped: the host name "${Deno.hostname()}" does not resolve to a private address here`);
    return;
  }
  const svc = await startService();
  try {
    const client = walletClient(svc, await newToken(svc));
    await t.step(`https://${name}/ passes configuration and is blocked when called`, async () => {
      const created = await client.postJson("/webhook", { url: `https://${name}/hook` });
      assert.equal(created.status, 200, "a host name cannot be judged before it is resolved");
      const test = await client.post("/webhook/test");
      assert.deepEqual([test.status, test.json()], [200, {
        success: false,
        message: "webhook call failed: target not allowed",
      }]);
    });
    await t.step("without the unsafe flag there is no warning", () => {
      assert.doesNotMatch(svc.output(), /UNSAFE_ALLOW_PRIVATE_WEBHOOKS/);
    });
    const unauthorized = await call(svc, "POST", "/webhook/test");
    assert.equal(unauthorized.status, 401);
  } finally {
    await svc.dispose();
  }
});

Deno.test("SSRF at delivery: a name that does not resolve reads as one resolving to a private address", async () => {
  const svc = await startService();
  try {
    const client = walletClient(svc, await newToken(svc));
    // RFC 6761: names under .invalid never resolve, so no DNS server can make this one exist.
    const names = [`nowhere-${crypto.randomUUID().slice(0, 8)}.invalid`];
    const name = await privateName();
    if (name) names.push(name);
    else console.log(`only an unresolvable name: "${Deno.hostname()}" is not private here`);
    const answers = [];
    for (const [i, host] of names.entries()) {
      const created = await client.postJson("/webhook", { url: `https://${host}/hook`, webhookId: `w${i}` });
      assert.equal(created.status, 200, created.text);
      const test = await client.post(`/webhook/w${i}/test`);
      assert.equal(test.status, 200);
      answers.push(test.json());
    }
    assert.deepEqual(
      answers,
      names.map(() => ({ success: false, message: "webhook call failed: target not allowed" })),
    );
    // The delivery history keeps the same text for both; the host is not in it.
    const history = await client.get("/webhook/w0/deliveries");
    assert.equal(history.status, 200, history.text);
    assert.match(history.text, /"target not allowed"/);
    assert.doesNotMatch(history.text, /resolve|public/);
  } finally {
    await svc.dispose();
  }
});
