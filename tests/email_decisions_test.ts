// Given events / when an email arrives for a mailbox / then its decision: price settled under the
// lock, the files stored and the delivery queued as effects, EmailReceived; the refusals. No database.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { decideBilled, NOW, WALLET } from "./helpers/decider.ts";
import { acceptEmailCommand, type EmailArrival } from "../src/email/commands.ts";
import type { ParsedEmail } from "../src/email/parse.ts";

const MAILBOX = "r_abc@mail.test";
const config = (
  includeAttachments: boolean,
  schedule?: { cron: string; timezone: string; active: boolean },
) => ({
  webhookId: "inbox",
  url: "https://hooks.example/in",
  headers: {},
  ...(schedule ? { schedule } : { options: {}, includeAttachments }),
  email: MAILBOX,
  secret: "whsec_x",
  createdAt: "2027-01-01T00:00:00.000Z",
});
const opened = (credits: number, includeAttachments = true): NewEvent[] => [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: credits, balance: credits, reason: "welcome" }),
  newEvent("WebhookCreated", config(includeAttachments)),
];

const email = (files: number) =>
  ({
    messageId: "<m1@sender.example>",
    from: { email: "ann@sender.example", name: "Ann" },
    cc: [],
    subject: "Hello",
    text: "Hi",
    html: "",
    attachments: Array.from({ length: files }, (_, i) => ({
      filename: `f${i}.txt`,
      contentType: "text/plain",
      size: 2,
      content: new TextEncoder().encode("hi"),
    })),
    truncated: false,
  }) as unknown as ParsedEmail;

function arrival(files: number, includeAttachments = true): EmailArrival {
  return {
    email: email(files),
    recipient: MAILBOX,
    mailbox: { walletId: WALLET, webhookId: "inbox", includeAttachments },
    receivedAt: NOW,
    size: 1234,
    startedAt: 0,
    duplicateKey: "email:key",
    ids: {
      deliveryId: "dlv_1",
      messageId: "msg_1",
      attachmentIds: Array.from({ length: files }, (_, i) => `att${i}`),
    },
  };
}

Deno.test("a plain email costs 2: EmailReceived and one delivery queued, no file", () => {
  const call = decideBilled(opened(100), acceptEmailCommand(arrival(0))).call();
  assert.deepEqual([call.outcome, call.log, call.charge], ["accepted", { status: 250 }, 2]);
  assert.deepEqual(call.events?.map((e) => e.type), ["EmailReceived"]);
  assert.deepEqual(call.effects?.map((e) => e.type), ["queueDelivery"]);
});

Deno.test("with attachments forwarded it costs 5 and stores each file with its id", () => {
  const call = decideBilled(opened(100), acceptEmailCommand(arrival(2))).call();
  assert.equal(call.charge, 5);
  assert.deepEqual(
    call.effects?.map((e: any) =>
      e.type === "storeAttachment" ? e.file.id : e.delivery.payload.attachments.length
    ),
    ["att0", "att1", 2],
  );
  const received = call.events![0] as Extract<NewEvent, { type: "EmailReceived" }>;
  assert.deepEqual(received.data.attachments.map((a) => a.id), ["att0", "att1"]);
});

Deno.test("attachments off: 2 credits, nothing stored, the files still listed without ids", () => {
  const call = decideBilled(opened(100, false), acceptEmailCommand(arrival(2, false))).call();
  assert.equal(call.charge, 2);
  assert.deepEqual(call.effects?.map((e) => e.type), ["queueDelivery"]);
  const received = call.events![0] as Extract<NewEvent, { type: "EmailReceived" }>;
  assert.deepEqual(received.data.attachments.map((a) => a.id), [undefined, undefined]);
});

Deno.test("the owner can pay 2 but not the 5 attachments cost: insufficient, free, nothing queued", () => {
  // The price declared at RCPT was 2 (attachments off); they were turned on before DATA.
  const given = [...opened(4, false), newEvent("WebhookUpdated", config(true))];
  const call = decideBilled(given, acceptEmailCommand(arrival(1, false))).call();
  assert.deepEqual([call.outcome, call.log.status, call.charge, call.effects], [
    "insufficient",
    402,
    0,
    undefined,
  ]);
});

Deno.test("a mailbox deleted or turned into a schedule since RCPT is unknown, free", () => {
  const deleted = [...opened(100), newEvent("WebhookDeleted", { webhookId: "inbox" })];
  const scheduled = [
    ...opened(100),
    newEvent("WebhookUpdated", config(true, { cron: "0 9 * * *", timezone: "UTC", active: true })),
  ];
  for (const given of [deleted, scheduled]) {
    const call = decideBilled(given, acceptEmailCommand(arrival(0))).call();
    assert.deepEqual([call.outcome, call.log, call.charge], ["unknown", {
      status: 550,
      error: "Mailbox does not exist",
    }, 0]);
  }
});

Deno.test("below the RCPT price the ledger refuses it unpaid; only acceptances are kept for repeats", () => {
  const call = decideBilled(opened(1), acceptEmailCommand(arrival(0))).call();
  assert.deepEqual([call.outcome, call.log.status], ["insufficient", 402]);
  const dedupe = acceptEmailCommand(arrival(0)).idempotency!;
  assert.equal(dedupe.keep("insufficient", { status: 402 }), undefined);
  assert.equal(dedupe.replay(dedupe.keep("accepted", { status: 250 })!), "accepted");
});
