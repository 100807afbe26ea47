// The chat formats render a neutral ChatMessage: an email and an alert each map to one, so an
// alert is never dressed as an email. An email's body is the one its chat message renders.

import assert from "node:assert/strict";
import { type ChatFormat, type ChatMessage, renderChat, renderEmail } from "../src/webhooks/formats/mod.ts";
import { renderAlert } from "../src/alerts/format.ts";
import type { EmailPayload } from "../src/webhooks/payloads.ts";
import { SERVICE_NAME } from "../src/service_info.ts";

const FORMATS: ChatFormat[] = ["slack", "discord", "teams", "telegram", "pagerduty"];
const OPTIONS = { chat_id: "-100123", routing_key: "rk" };

const message: ChatMessage = {
  id: "<m1@example.test>",
  at: "2026-11-21T10:00:00.000Z",
  from: { email: "ann@example.test", name: "Ann Example" },
  subject: "Report *ready*",
  text: "Hello <b>plain</b> & more",
  attachments: [{
    filename: "a.pdf",
    size: 2048,
    contentType: "application/pdf",
    downloadUrl: "https://x.test/a",
    downloadUrlExpiresAt: "2026-11-28T10:00:00.000Z",
  }],
};

const email: EmailPayload = {
  externalMessageId: message.id,
  receivedAt: message.at,
  from: message.from,
  to: { hash: "ab".repeat(32) },
  webhookId: "default",
  recipient: "r_abc@in.svc.test",
  cc: [],
  subject: message.subject,
  text: message.text,
  html: "<p>ignored: there is a text part</p>",
  attachments: message.attachments,
};

Deno.test("renderChat: an email's chat body is its chat message's, in every chat format", () => {
  for (const format of FORMATS) {
    assert.deepEqual(
      renderEmail(email, { format, options: OPTIONS }),
      renderChat(message, format, OPTIONS),
      format,
    );
  }
});

Deno.test("renderChat: an unknown format is refused", () => {
  assert.throws(() => renderChat(message, "fax" as ChatFormat, {}), /Unknown format "fax"/);
});

Deno.test("renderAlert: a chat alert is a message from the service, with no email around it", () => {
  const alert = {
    kind: "low balance" as const,
    payload: { wallet: 3, threshold: 10, token_hash: "cd".repeat(32) },
  };
  const now = new Date("2026-11-26T01:02:03.000Z");
  const body = renderAlert(alert, { format: "pagerduty", options: OPTIONS }, now) as {
    dedup_key: string;
    payload: { source: string; timestamp: string; custom_details: { from_name: string } };
  };
  assert.equal(body.dedup_key, `low-balance-${"cd".repeat(8)}-10`);
  assert.equal(body.payload.timestamp, now.toISOString());
  assert.equal(body.payload.source, "unknown");
  assert.equal(body.payload.custom_details.from_name, SERVICE_NAME);
  const slack = renderAlert(alert, { format: "slack" }, now) as { text: string };
  assert.ok(slack.text.startsWith(`*Low balance: 3 credits left*\nFrom: ${SERVICE_NAME}\n\n`), slack.text);
});
