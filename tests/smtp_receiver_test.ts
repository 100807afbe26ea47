// Inbound email end to end: real SMTP (nodemailer) into the running service, deliveries observed on
// a local receiver, balances checked to the credit. One service for the whole session; each step
// uses its own wallets and webhooks.
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, type Service, startService } from "./helpers/service.ts";
import { type ReceivedRequest, type Receiver, startReceiver } from "./helpers/receiver.ts";
import { sendMail, sendRaw } from "./helpers/smtp.ts";
import { sha256Hex } from "../src/ids.ts";

type Client = ReturnType<typeof walletClient>;

/** The balance now: GET /token costs 1 and answers the balance after it, so the balance before is +1. */
async function balanceOf(client: Client): Promise<number> {
  const answer = await client.get("/token");
  assert.equal(answer.status, 200, answer.text);
  return answer.json().wallet + 1;
}

async function mailbox(
  client: Client,
  receiver: Receiver,
  webhookId: string,
  config: Record<string, unknown> = {},
) {
  const created = await client.postJson("/webhook", {
    url: `${receiver.url}/${webhookId}`,
    webhookId,
    ...config,
  });
  assert.equal(created.status, 200, created.text);
  const body = created.json();
  return { address: body.email as string, secret: body.secret as string, webhookId };
}

/** The requests that reached `/<webhookId>` once there are `count` of them. */
async function deliveriesTo(receiver: Receiver, webhookId: string, count: number, timeoutMs = 15_000) {
  const deadline = performance.now() + timeoutMs;
  while (true) {
    const got = receiver.received.filter((r) => r.path === `/${webhookId}`);
    if (got.length >= count) return got;
    if (performance.now() > deadline) {
      throw new Error(`/${webhookId} got ${got.length} of ${count} deliveries within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function json(request: ReceivedRequest): any {
  return JSON.parse(request.body);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("inbound email over SMTP", async (t) => {
  const svc: Service = await startService({
    smtp: true,
    env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", DELIVERY_RETRY_SCALE: "0.001" },
  });
  const receiver = startReceiver();
  try {
    const ann = walletClient(svc, await newToken(svc));
    const annHash = await sha256Hex(ann.token);
    const raw = await mailbox(ann, receiver, "raw");
    const noFiles = await mailbox(ann, receiver, "no-files", { includeAttachments: false });
    let annBalance = 98;
    assert.equal(await balanceOf(ann), annBalance--);

    await t.step("a plain mail: 250, the raw payload, 2 credits", async () => {
      const sent = await sendMail(svc, {
        to: raw.address,
        cc: "Carl <carl@cc.example>",
        subject: "Quarterly report",
        text: "Numbers are up.\nSee you.\n",
        messageId: "<plain-1@sender.example>",
      });
      assert.equal(sent.code, 250, sent.response);
      assert.equal(sent.response, "250 2.0.0 Message accepted");
      const [delivery] = await deliveriesTo(receiver, "raw", 1);
      new Webhook(raw.secret).verify(delivery.body, delivery.headers);
      const payload = json(delivery);
      assert.ok(Math.abs(Date.parse(payload.receivedAt) - Date.now()) < 60_000);
      assert.deepEqual({ ...payload, receivedAt: undefined }, {
        externalMessageId: "<plain-1@sender.example>",
        receivedAt: undefined,
        from: { email: "ann@sender.example", name: "Ann Sender" },
        to: { hash: annHash },
        webhookId: "raw",
        recipient: raw.address,
        cc: [{ email: "carl@cc.example", name: "Carl" }],
        subject: "Quarterly report",
        text: "Numbers are up.\nSee you.\n",
        html: "",
        attachments: [],
      });
      annBalance -= 2;
      assert.equal(await balanceOf(ann), annBalance--);
    });

    await t.step("an HTML-only mail: html as sent, text made from it", async () => {
      const html = "<h1>Status</h1><p>All <b>green</b>.</p><script>alert(1)</script>";
      const sent = await sendMail(svc, { to: raw.address, subject: "Status", html });
      assert.equal(sent.code, 250, sent.response);
      const payload = json((await deliveriesTo(receiver, "raw", 2))[1]);
      // nodemailer ends the part with a line break.
      assert.equal(payload.html, html + "\n");
      assert.match(payload.text, /^Status\s+All green\.\s*$/);
      assert.match(payload.externalMessageId, /^<.+@.+>$/);
      annBalance -= 2;
      assert.equal(await balanceOf(ann), annBalance--);
    });

    const binary = crypto.getRandomValues(new Uint8Array(3000));
    const attachments = [
      { filename: "data.bin", content: binary, contentType: "application/octet-stream" },
      { filename: "notes é.txt", content: "plain notes\n", contentType: "text/plain" },
    ];

    await t.step("attachments: 5 credits, signed links that download the exact bytes", async () => {
      const sent = await sendMail(svc, {
        to: raw.address,
        subject: "Files",
        text: "Two files.",
        attachments,
      });
      assert.equal(sent.code, 250, sent.response);
      const payload = json((await deliveriesTo(receiver, "raw", 3))[2]);
      assert.deepEqual(
        payload.attachments.map((a: any) => [a.filename, a.size, a.contentType]),
        [["data.bin", 3000, "application/octet-stream"], ["notes é.txt", 12, "text/plain"]],
      );
      const [first, second] = payload.attachments;
      const expiresIn = Date.parse(first.downloadUrlExpiresAt) - Date.now();
      assert.ok(expiresIn > 3_500_000 && expiresIn <= 3_600_000, `link valid for ${expiresIn} ms`);
      const download = await fetch(first.downloadUrl);
      assert.equal(download.status, 200);
      assert.equal(download.headers.get("content-type"), "application/octet-stream");
      assert.match(download.headers.get("content-disposition")!, /^attachment; filename="data.bin"/);
      assert.deepEqual(new Uint8Array(await download.arrayBuffer()), binary);
      const text = await fetch(second.downloadUrl);
      assert.equal(await text.text(), "plain notes\n");
      assert.match(text.headers.get("content-disposition")!, /filename\*=UTF-8''notes%20%C3%A9\.txt$/);
      // Another first character of the signature, whatever it was.
      const tampered = await fetch(
        first.downloadUrl.replace(/sig=(.)/, (_: string, c: string) => `sig=${c === "A" ? "B" : "A"}`),
      );
      assert.equal(tampered.status, 403);
      await tampered.body?.cancel();
      annBalance -= 5;
      assert.equal(await balanceOf(ann), annBalance--);
    });

    await t.step("includeAttachments false: no files forwarded, 2 credits", async () => {
      const sent = await sendMail(svc, {
        to: noFiles.address,
        subject: "Files",
        text: "Two files.",
        attachments,
      });
      assert.equal(sent.code, 250, sent.response);
      const payload = json((await deliveriesTo(receiver, "no-files", 1))[0]);
      assert.deepEqual(payload.attachments, []);
      assert.equal(payload.text, "Two files.");
      annBalance -= 2;
      assert.equal(await balanceOf(ann), annBalance--);
    });

    await t.step(
      "the same Message-ID again to the same mailbox: 250, not charged or delivered twice",
      async () => {
        const message = {
          to: raw.address,
          subject: "Once",
          text: "Only once.",
          messageId: "<once@sender.example>",
        };
        assert.equal((await sendMail(svc, message)).code, 250);
        assert.equal((await sendMail(svc, message)).code, 250);
        await deliveriesTo(receiver, "raw", 4);
        await sleep(500);
        assert.equal(receiver.received.filter((r) => r.path === "/raw").length, 4);
        annBalance -= 2;
        assert.equal(await balanceOf(ann), annBalance--);
      },
    );

    await t.step("the call log shows each email with its cost", async () => {
      const logs = (await ann.get("/token/logs?type=email&n=10")).json().logs;
      assert.deepEqual(
        logs.map((l: any) => [l.method, l.path, l.endpoint, l.status_code, l.cost]),
        [
          ["SMTP", raw.address, "email", 250, 2],
          ["SMTP", noFiles.address, "email", 250, 2],
          ["SMTP", raw.address, "email", 250, 5],
          ["SMTP", raw.address, "email", 250, 2],
          ["SMTP", raw.address, "email", 250, 2],
        ],
      );
      annBalance -= 5;
      const deliveries = await ann.get("/token/logs?type=webhook-delivery&n=1");
      assert.equal(deliveries.json().logs[0].endpoint, "webhook-delivery");
      annBalance -= 1;
      assert.equal(await balanceOf(ann), annBalance--);
    });

    await t.step("two mailboxes of two wallets in one mail: each owner billed, each delivered", async () => {
      const bob = walletClient(svc, await newToken(svc));
      const bobBox = await mailbox(bob, receiver, "bob");
      const sent = await sendMail(svc, {
        to: [raw.address, bobBox.address],
        subject: "Both",
        text: "For two.",
      });
      assert.equal(sent.code, 250, sent.response);
      assert.deepEqual(sent.accepted.sort(), [raw.address, bobBox.address].sort());
      const [forBob] = await deliveriesTo(receiver, "bob", 1);
      const [, , , , forAnn] = await deliveriesTo(receiver, "raw", 5);
      assert.deepEqual([json(forBob).recipient, json(forBob).to.hash], [
        bobBox.address,
        await sha256Hex(bob.token),
      ]);
      assert.deepEqual([json(forAnn).recipient, json(forAnn).to.hash], [raw.address, annHash]);
      assert.equal(json(forAnn).externalMessageId, json(forBob).externalMessageId);
      assert.notEqual(forAnn.headers["webhook-id"], forBob.headers["webhook-id"]);
      annBalance -= 2;
      assert.equal(await balanceOf(ann), annBalance--);
      assert.equal(await balanceOf(bob), 100 - 1 - 2);
    });

    await t.step("unknown, deleted and foreign mailboxes: 550 5.1.1 at RCPT", async () => {
      const gone = await mailbox(ann, receiver, "gone");
      assert.equal((await ann.delete("/webhook/gone")).status, 200);
      annBalance -= 2;
      for (const address of ["r_doesnotexist@mail.localhost", gone.address, "someone@elsewhere.example"]) {
        const sent = await sendMail(svc, { to: address, subject: "Nobody", text: "Hello?" });
        assert.equal(sent.code, 550, `${address}: ${sent.response}`);
        assert.match(sent.response, /^550 5\.1\.1 /);
      }
      const mixed = await sendMail(svc, {
        to: [raw.address, "r_doesnotexist@mail.localhost"],
        subject: "Half",
        text: "One of two.",
      });
      assert.equal(mixed.code, 250);
      assert.deepEqual(mixed.rejected, ["r_doesnotexist@mail.localhost"]);
      assert.deepEqual(mixed.rejectedResponses, ["550 5.1.1 Mailbox does not exist"]);
      await deliveriesTo(receiver, "raw", 6);
      annBalance -= 2;
      assert.equal(receiver.received.filter((r) => r.path === "/gone").length, 0);
      assert.equal(await balanceOf(ann), annBalance--);
    });

    await t.step("over 10 MiB: 552, nothing charged", async () => {
      const sent = await sendMail(svc, {
        to: raw.address,
        subject: "Huge",
        text: "x".repeat(10.5 * 1024 * 1024),
      });
      assert.equal(sent.code, 552, sent.response);
      assert.equal(await balanceOf(ann), annBalance--);
    });

    await t.step(
      "every format through the pipeline; a custom template keeps hostile text verbatim",
      async () => {
        const carol = walletClient(svc, await newToken(svc));
        const template = {
          subject: "{{subject}}",
          body: "{{text}}",
          line: "Mail from {{from.email}}: {{subject}}",
          files: "{{attachments}}",
        };
        const boxes = {
          slack: await mailbox(carol, receiver, "slack", { format: "slack" }),
          discord: await mailbox(carol, receiver, "discord", { format: "discord" }),
          teams: await mailbox(carol, receiver, "teams", { format: "teams" }),
          telegram: await mailbox(carol, receiver, "telegram", {
            format: "telegram",
            options: { chat_id: "42" },
          }),
          pagerduty: await mailbox(carol, receiver, "pagerduty", {
            format: "pagerduty",
            options: { routing_key: "R0UT1NG" },
          }),
          custom: await mailbox(carol, receiver, "custom", { format: "custom", template }),
        };
        const subject = `He said "hi" \\ {braces} {{subject}} }{`;
        const text =
          `Line "one" with \\backslash\\ and {json: "like"}\n{{text}} {{ not }} \\n literal\n\ttabbed }}\n`;
        const sent = await sendMail(svc, {
          to: Object.values(boxes).map((box) => box.address),
          subject,
          text,
          messageId: "<formats@sender.example>",
        });
        assert.equal(sent.code, 250, sent.response);
        const body = async (name: keyof typeof boxes) => {
          const [request] = await deliveriesTo(receiver, name, 1);
          new Webhook(boxes[name].secret).verify(request.body, request.headers);
          return json(request);
        };
        const custom = await body("custom");
        assert.deepEqual(custom, {
          subject,
          body: text,
          line: `Mail from ann@sender.example: ${subject}`,
          files: [],
        });
        assert.ok((await body("slack")).text.startsWith("*He said"));
        assert.ok((await body("discord")).content.includes("backslash"));
        assert.equal((await body("teams")).type, "message");
        const telegram = await body("telegram");
        assert.deepEqual([telegram.chat_id, telegram.parse_mode], [42, "HTML"]);
        const pagerduty = await body("pagerduty");
        assert.deepEqual(
          [pagerduty.routing_key, pagerduty.event_action, pagerduty.dedup_key, pagerduty.payload.summary],
          ["R0UT1NG", "trigger", "<formats@sender.example>", subject],
        );
        // A subject can carry a line break only as an encoded word; sent raw, as a mail server would.
        const twoLines = `Two\nlines "quoted" \\ {{subject}} }{`;
        const encoded = btoa(String.fromCharCode(...new TextEncoder().encode(twoLines)));
        const rawMail = [
          "From: Ann <ann@sender.example>",
          `To: ${boxes.custom.address}`,
          `Subject: =?UTF-8?B?${encoded}?=`,
          "Message-ID: <two-lines@sender.example>",
          "Content-Type: text/plain; charset=utf-8",
          "",
          text.replaceAll("\n", "\r\n"),
        ].join("\r\n");
        const second = await sendRaw(svc, new TextEncoder().encode(rawMail), [boxes.custom.address]);
        assert.equal(second.code, 250, second.response);
        const [, request] = await deliveriesTo(receiver, "custom", 2);
        assert.deepEqual(json(request), {
          subject: twoLines,
          body: text,
          line: `Mail from ann@sender.example: ${twoLines}`,
          files: [],
        });
        assert.equal(await balanceOf(carol), 100 - 6 - 7 * 2);
      },
    );

    await t.step(
      "an owner below 2 credits: 452 at RCPT; attachments that cost 5 refused at DATA",
      async () => {
        const dave = walletClient(svc, await newToken(svc));
        const box = await mailbox(dave, receiver, "dave");
        // 99 left; 95 KV writes leave 4: enough for a plain mail, not for one with files.
        for (let batch = 0; batch < 95; batch += 19) {
          await Promise.all(Array.from({ length: 19 }, (_, i) => dave.post(`/kv/drain/k${batch + i}`, "x")));
        }
        const withFiles = await sendMail(svc, { to: box.address, subject: "Files", text: "x", attachments });
        assert.equal(withFiles.code, 452, withFiles.response);
        assert.equal(withFiles.response, "452 4.2.2 Insufficient credits");
        const refused = (await dave.get("/token/logs?type=email&n=5")).json().logs;
        assert.deepEqual(
          refused.map((l: any) => [l.path, l.status_code, l.error, l.cost, l.balance]),
          [[box.address, 402, "Insufficient credits", 0, 4]],
        );
        // 3 after reading one log entry.
        const plain = await sendMail(svc, { to: box.address, subject: "Plain", text: "fits" });
        assert.equal(plain.code, 250, plain.response);
        const broke = await sendMail(svc, { to: box.address, subject: "Plain", text: "does not fit" });
        assert.equal(broke.code, 452, broke.response);
        assert.deepEqual(broke.rejectedResponses, ["452 4.2.2 Insufficient credits"]);
        assert.equal(await balanceOf(dave), 1);
        assert.equal((await deliveriesTo(receiver, "dave", 1)).length, 1);
        await sleep(300);
        assert.equal(receiver.received.filter((r) => r.path === "/dave").length, 1);
      },
    );

    await t.step("the audit is clean", async () => {
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    });
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});
