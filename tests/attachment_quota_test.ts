// Attachment storage per wallet is bounded (issue 21, ATTACHMENT_STORAGE_PER_WALLET): past the bound a
// mail whose files would be stored gets a temporary 452 4.2.2, costs nothing and stores nothing, while
// mail without files, a mailbox that does not keep files and other wallets are served as before. The
// bound is read under the wallet's lock, so two instances accepting at once cannot both pass it.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { decideBilled, NOW, WALLET } from "./helpers/decider.ts";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { inProcessService } from "./helpers/in_process.ts";
import { acceptEmailCommand, type EmailArrival } from "../src/email/commands.ts";
import { acceptMessage } from "../src/email/accept.ts";
import { createServiceLedger } from "../src/service_ledger.ts";
import { parseConfig } from "../src/config.ts";
import type { ParsedEmail } from "../src/email/parse.ts";

const MiB = 1024 * 1024;
const file = (bytes: number, name = "scan.bin") => ({ filename: name, content: new Uint8Array(bytes) });

Deno.test("past the wallet's attachment storage a mail with files gets 452 and is neither charged nor kept", async () => {
  const svc = await startService({
    smtp: true,
    env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", ATTACHMENT_STORAGE_PER_WALLET: String(MiB) },
  });
  const receiver = startReceiver();
  try {
    const owner = walletClient(svc, await newToken(svc));
    const box =
      (await owner.postJson("/webhook", { url: `${receiver.url}/in`, webhookId: "in" })).json().email;
    const bare = (await owner.postJson("/webhook", {
      url: `${receiver.url}/bare`,
      webhookId: "bare",
      includeAttachments: false,
    })).json().email;
    const other = walletClient(svc, await newToken(svc));
    const otherBox =
      (await other.postJson("/webhook", { url: `${receiver.url}/o`, webhookId: "o" })).json().email;

    const first = await sendMail(svc, { to: box, subject: "First", text: "1", attachments: [file(600_000)] });
    assert.equal(first.code, 250, first.response);
    const second = await sendMail(svc, {
      to: box,
      subject: "Second",
      text: "2",
      attachments: [file(600_000)],
    });
    assert.equal(second.code, 452, second.response);
    assert.equal(
      second.response,
      "452 4.2.2 Mailbox full: attachment storage over its limit, try again later",
    );

    // What stores nothing more still passes; so does another wallet's mail.
    const plain = await sendMail(svc, { to: box, subject: "Plain", text: "3" });
    assert.equal(plain.code, 250, plain.response);
    const notKept = await sendMail(svc, {
      to: bare,
      subject: "Bare",
      text: "4",
      attachments: [file(600_000)],
    });
    assert.equal(notKept.code, 250, notKept.response);
    const theirs = await sendMail(svc, {
      to: otherBox,
      subject: "Theirs",
      text: "5",
      attachments: [file(600_000)],
    });
    assert.equal(theirs.code, 250, theirs.response);

    const delivered = (await receiver.waitFor(4)).map((r) => JSON.parse(r.body).subject).sort();
    assert.deepEqual(delivered, ["Bare", "First", "Plain", "Theirs"]);
    const logs = (await owner.get("/token/logs?type=email&n=10")).json().logs;
    assert.deepEqual(
      logs.map((l: any) => [l.status_code, l.cost]),
      [[250, 2], [250, 2], [452, 0], [250, 5]],
    );
    assert.match(
      logs[2].error,
      /^Attachment storage full: 600000 bytes stored, 600000 more would pass the limit of 1048576$/,
    );
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});

Deno.test("two instances accepting at once cannot both pass the bound: it is read under the wallet's lock", async () => {
  const svc = await inProcessService();
  // A second instance: its own ledger and batches, the same database.
  const second = createServiceLedger(svc.db.sql, svc.clock, { validateEvents: true });
  try {
    const token = await svc.newToken();
    const created = await svc.request("POST", "/webhook", {
      token,
      body: JSON.stringify({ url: "https://hooks.example/in", webhookId: "inbox" }),
    });
    const mailbox = JSON.parse(created.text).email;
    const raw = (id: number) =>
      new TextEncoder().encode(
        `From: a@x.example\r\nTo: ${mailbox}\r\nSubject: Files ${id}\r\nMessage-ID: <f${id}@x>\r\n` +
          `MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n` +
          `Hi\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=f.bin\r\n` +
          `Content-Transfer-Encoding: base64\r\n\r\n${
            btoa("x".repeat(600_000)).replace(/.{76}/g, "$&\r\n")
          }\r\n--b--\r\n`,
      );
    const services = (ledger: typeof second) => ({
      sql: svc.db.sql,
      ledger,
      clock: svc.clock,
      mailDomain: "mail.localhost",
      attachmentStorageLimit: MiB,
    });
    const replies = await Promise.all([
      acceptMessage(services(svc.ledger), { raw: raw(1), recipients: [mailbox], startedAt: 0 }),
      acceptMessage(services(second), { raw: raw(2), recipients: [mailbox], startedAt: 0 }),
      acceptMessage(services(svc.ledger), { raw: raw(3), recipients: [mailbox], startedAt: 0 }),
    ]);
    assert.deepEqual(replies.map((reply) => reply.code).sort(), [250, 452, 452]);
    const [{ bytes }] = await svc.db
      .sql`select sum(size)::int as bytes from attachments where wallet_id <> 'service'`;
    assert.equal(bytes, 600_000);
  } finally {
    await svc.close();
  }
});

const MAILBOX = "r_abc@mail.test";
const openedWith = (includeAttachments: boolean): NewEvent[] => [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" }),
  newEvent("WebhookCreated", {
    webhookId: "inbox",
    url: "https://hooks.example/in",
    headers: {},
    options: {},
    includeAttachments,
    email: MAILBOX,
    secret: "whsec_x",
    createdAt: "2027-01-01T00:00:00.000Z",
  }),
];
const opened = openedWith(true);

/** An earlier mail whose files were stored (with ids) or only listed (without). */
const received = (sizes: number[], stored = true) =>
  newEvent("EmailReceived", {
    deliveryId: "dlv_0",
    webhookId: "inbox",
    recipient: MAILBOX,
    messageId: "<m0@x>",
    from: "a@x.example",
    subject: "Before",
    size: 1000,
    attachments: sizes.map((size, i) => ({
      filename: `f${i}`,
      contentType: "application/octet-stream",
      size,
      ...(stored ? { id: `old${i}` } : {}),
    })),
    truncated: false,
  });

function arrival(sizes: number[], limit: number, includeAttachments = true): EmailArrival {
  const email = {
    messageId: "<m1@x>",
    from: { email: "a@x.example", name: "" },
    to: [],
    cc: [],
    subject: "Now",
    text: "Hi",
    html: "",
    headers: [],
    attachments: sizes.map((size, i) => ({
      filename: `n${i}`,
      contentType: "application/octet-stream",
      size,
      content: new Uint8Array(size),
    })),
    truncated: false,
  } satisfies ParsedEmail;
  return {
    email,
    recipient: MAILBOX,
    mailbox: { walletId: WALLET, webhookId: "inbox", includeAttachments },
    receivedAt: NOW,
    size: 2000,
    startedAt: 0,
    ids: { deliveryId: "dlv_1", messageId: "msg_1", attachmentIds: sizes.map((_, i) => `att${i}`) },
    attachmentStorageLimit: limit,
  };
}

Deno.test("the bound: files that fit are stored; one byte over is full, free, and stores nothing", () => {
  const given = [...opened, received([600, 300])];
  const fits = decideBilled(given, acceptEmailCommand(arrival([100], 1000))).call();
  assert.deepEqual([fits.outcome, fits.charge], ["accepted", 5]);
  assert.equal(fits.effects?.filter((e) => e.type === "storeAttachment").length, 1);

  const over = decideBilled(given, acceptEmailCommand(arrival([101], 1000))).call();
  assert.deepEqual([over.outcome, over.charge, over.log.status], ["full", 0, 452]);
  assert.equal(
    over.log.error,
    "Attachment storage full: 900 bytes stored, 101 more would pass the limit of 1000",
  );
  assert.deepEqual([over.events ?? [], over.effects ?? []], [[], []]);
});

Deno.test("only stored files count, and a mail that stores none is never full", () => {
  const listedOnly = [...opened, received([5000], false)];
  assert.equal(decideBilled(listedOnly, acceptEmailCommand(arrival([900], 1000))).call().outcome, "accepted");
  const full = [...opened, received([1000])];
  assert.equal(decideBilled(full, acceptEmailCommand(arrival([], 1000))).call().outcome, "accepted");
  const notKept = decideBilled(
    [...openedWith(false), received([1000])],
    acceptEmailCommand(arrival([5000], 1000, false)),
  ).call();
  assert.deepEqual([notKept.outcome, notKept.charge], ["accepted", 2]);
});

Deno.test("ATTACHMENT_STORAGE_PER_WALLET: 256 MiB by default, at least 1 MiB", () => {
  const config = parseConfig({});
  assert.ok(!("error" in config) && config.attachmentStoragePerWallet === 256 * MiB);
  const small = parseConfig({ ATTACHMENT_STORAGE_PER_WALLET: "1000" });
  assert.ok("error" in small);
  assert.match(small.error, /^Invalid ATTACHMENT_STORAGE_PER_WALLET: must be at least 1048576$/m);
});
