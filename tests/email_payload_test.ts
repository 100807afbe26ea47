// The pure parts of inbound email: price, queued payload, EmailReceived, duplicate keys and the one
// SMTP answer folded from every mailbox's outcome.
import assert from "node:assert/strict";
import {
  duplicateKey,
  EMAIL_COST,
  EMAIL_WITH_ATTACHMENTS_COST,
  emailCost,
  emailReceivedEvent,
  type MailboxContext,
  queuedEmailOf,
} from "../src/email/payload.ts";
import { replyFor } from "../src/email/accept.ts";
import { refusedMessage } from "../src/email/smtp_reply.ts";
import { parseEvent } from "../events/catalogue.ts";
import type { ParsedEmail } from "../src/email/parse.ts";

const email: ParsedEmail = {
  messageId: "<m1@sender.example>",
  from: { email: "ann@sender.example", name: "Ann" },
  to: [{ email: "r_x@mail.localhost", name: "" }],
  cc: [{ email: "carl@cc.example", name: "Carl" }],
  subject: "Report",
  text: "Body",
  html: "<p>Body</p>",
  headers: [["Subject", "Report"]],
  attachments: [
    { filename: "a.pdf", contentType: "application/pdf", size: 3, content: new Uint8Array([1, 2, 3]) },
    { filename: "b.txt", contentType: "text/plain", size: 1, content: new Uint8Array([65]) },
  ],
  truncated: false,
};

const mailbox: MailboxContext = {
  webhookId: "default",
  recipient: "r_x@mail.localhost",
  walletHash: "ab".repeat(32),
  receivedAt: new Date("2026-01-02T03:04:05.000Z"),
  attachments: [{
    owner: "ab".repeat(32),
    id: "att1",
    filename: "a.pdf",
    size: 3,
    contentType: "application/pdf",
  }],
};

Deno.test("the price: 2, or 5 when attachments are forwarded", () => {
  assert.equal(emailCost(true, 0), EMAIL_COST);
  assert.equal(emailCost(true, 2), EMAIL_WITH_ATTACHMENTS_COST);
  assert.equal(emailCost(false, 2), EMAIL_COST);
  assert.deepEqual([EMAIL_COST, EMAIL_WITH_ATTACHMENTS_COST], [2, 5]);
});

Deno.test("the queued payload has the fields of CONTRACT section 9 and no bytes", () => {
  assert.deepEqual(queuedEmailOf(email, mailbox), {
    externalMessageId: "<m1@sender.example>",
    receivedAt: "2026-01-02T03:04:05.000Z",
    from: { email: "ann@sender.example", name: "Ann" },
    to: { hash: "ab".repeat(32) },
    webhookId: "default",
    recipient: "r_x@mail.localhost",
    cc: [{ email: "carl@cc.example", name: "Carl" }],
    subject: "Report",
    text: "Body",
    html: "<p>Body</p>",
    attachments: mailbox.attachments,
  });
});

Deno.test("EmailReceived holds metadata only and passes the catalogue's schema", () => {
  const event = emailReceivedEvent(email, mailbox, { deliveryId: "dlv_1", size: 1234 });
  assert.deepEqual(parseEvent(event), event);
  assert.deepEqual(event.data, {
    deliveryId: "dlv_1",
    webhookId: "default",
    recipient: "r_x@mail.localhost",
    messageId: "<m1@sender.example>",
    from: "ann@sender.example",
    subject: "Report",
    size: 1234,
    attachments: [
      { filename: "a.pdf", contentType: "application/pdf", size: 3, id: "att1" },
      { filename: "b.txt", contentType: "text/plain", size: 1 },
    ],
    truncated: false,
  });
  assert.doesNotMatch(JSON.stringify(event), /Body/);
});

Deno.test("duplicate keys: per mailbox and Message-ID, case-insensitive address, never an HTTP key", async () => {
  const key = await duplicateKey("R_X@mail.localhost", "<m1@sender.example>");
  assert.equal(key, await duplicateKey("r_x@mail.localhost", "<m1@sender.example>"));
  assert.notEqual(key, await duplicateKey("r_y@mail.localhost", "<m1@sender.example>"));
  assert.notEqual(key, await duplicateKey("r_x@mail.localhost", "<m2@sender.example>"));
  assert.match(key, /^email:[0-9a-f]{64}$/);
  assert.ok(key.length > 64, "HTTP Idempotency-Keys are at most 64 characters");
});

Deno.test("one SMTP answer for all mailboxes", () => {
  assert.equal(replyFor(["accepted"]).code, 250);
  assert.equal(replyFor(["duplicate"]).code, 250);
  assert.equal(replyFor(["accepted", "insufficient", "unknown"]).code, 250);
  assert.equal(replyFor(["insufficient", "unknown"]).message, "4.2.2 Insufficient credits");
  assert.equal(replyFor(["unknown"]).message, "5.1.1 Mailbox does not exist");
  assert.equal(replyFor(["accepted", "fault"]).message, "4.3.0 Temporary failure, try again later");
});

Deno.test("a refused message is permanent, unless the parser was only busy", () => {
  assert.deepEqual(refusedMessage("MIME nesting too deep: more than 50 levels"), {
    code: 554,
    message: "5.6.0 Message refused: MIME nesting too deep: more than 50 levels",
  });
  assert.equal(refusedMessage("Parser busy: 100 messages already waiting").code, 451);
});
