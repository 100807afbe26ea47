// The payloads of `POST /webhook/<id>/test` (spec section 6): a sample email with a real attachment
// for mailbox webhooks, a scheduled-run payload for scheduled ones. Pure.
import type { ScheduledRunPayload } from "./payloads.ts";
import type { DeliveryContent, QueuedEmail } from "./outbox.ts";
import { SAMPLE_ATTACHMENT_REF } from "../attachments/sample_pdf.ts";
import type { MailboxWebhook, WebhookConfig } from "./config/config.ts";

export interface TestPayloadContext {
  /** The wallet hash. */
  hash: string;
  mailDomain: string;
  now: Date;
  /** A random part for the sample's message id. */
  nonce: string;
}

export function testEmail(webhook: MailboxWebhook, context: TestPayloadContext): QueuedEmail {
  return {
    externalMessageId: `<test-${context.nonce}@${context.mailDomain}>`,
    receivedAt: context.now.toISOString(),
    from: { email: `test@${context.mailDomain}`, name: "Webhook Test" },
    to: { hash: context.hash },
    webhookId: webhook.webhookId,
    recipient: webhook.email,
    cc: [],
    subject: "Test webhook",
    text: "This is a test email sent to check your webhook. It carries one sample attachment.",
    html: "<p>This is a test email sent to check your webhook.</p><p>It carries one sample attachment.</p>",
    attachments: [SAMPLE_ATTACHMENT_REF],
  };
}

export function testScheduledRun(webhook: WebhookConfig, context: TestPayloadContext): ScheduledRunPayload {
  const at = context.now.toISOString();
  return {
    type: "scheduled_webhook_run",
    webhookId: webhook.webhookId,
    scheduledFor: at,
    executedAt: at,
    walletHash: context.hash,
  };
}

/** What a test sends to `webhook`, by its mode. */
export function testDelivery(
  webhook: WebhookConfig,
  context: TestPayloadContext,
): Extract<DeliveryContent, { kind: "email" | "scheduled" }> {
  const webhookId = webhook.webhookId;
  return webhook.mode === "scheduled"
    ? { kind: "scheduled", webhookId, payload: testScheduledRun(webhook, context) }
    : { kind: "email", webhookId, payload: testEmail(webhook, context) };
}
