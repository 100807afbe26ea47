// One POST of a payload to a webhook (CONTRACT section 8): the body rendered for the webhook, its
// custom headers, the User-Agent and Standard Webhooks signature headers. Shared by the delivery
// worker and the test endpoint, so a test looks exactly like a real delivery.
import type { WebhookRow } from "../../projections/webhooks.ts";
import { SERVICE_NAME, SERVICE_VERSION } from "../service_info.ts";
import { renderEmail } from "./formats/mod.ts";
import { postJson, type PostResult } from "./http_post.ts";
import { signatureHeaders } from "./signature.ts";
import type { DeliveryContent } from "./outbox.ts";
import type { EmailPayload } from "./payloads.ts";
import { signedAttachmentLink } from "../attachments/signed_link.ts";
import { settingsOf } from "./registry.ts";
import { renderAlert } from "../wallets/alert_format.ts";
import type { LowBalancePayload } from "../wallets/low_balance.ts";
import type { Config } from "../config.ts";
import type { Sql } from "../db/connect.ts";
import { serverSecretFor } from "../server_secret.ts";

export const USER_AGENT = `${SERVICE_NAME}/${SERVICE_VERSION}`;
export const DELIVERY_TIMEOUT_MS = 10_000;

export interface LinkSigning {
  serverSecret: string;
  publicUrl: string;
}

/** How the service signs links: the server secret (generated once when not configured) and PUBLIC_URL. */
export async function linkSigning(sql: Sql, config: Config): Promise<LinkSigning> {
  return { serverSecret: await serverSecretFor(sql, config.serverSecret), publicUrl: config.publicUrl };
}

/**
 * The exact JSON text POSTed for `content`: an email goes through the webhook's format with its
 * attachment links signed now (valid 1 hour), or an empty list when the webhook excludes them.
 */
export async function renderDeliveryBody(
  webhook: WebhookRow,
  content: DeliveryContent,
  signing: LinkSigning,
  now: Date,
): Promise<string> {
  if (content.kind === "scheduled") return JSON.stringify(content.payload);
  const settings = settingsOf(webhook);
  if (content.kind === "alert") {
    return JSON.stringify(
      renderAlert(content.payload as unknown as LowBalancePayload, settings.mailbox ?? {}, now),
    );
  }
  const mailbox = settings.mailbox;
  const attachments = mailbox?.includeAttachments === false ? [] : await Promise.all(
    content.payload.attachments.map((ref) =>
      signedAttachmentLink(signing.serverSecret, signing.publicUrl, ref, now)
    ),
  );
  const email: EmailPayload = { ...content.payload, attachments };
  // A webhook turned scheduled after the email came still gets it, as the raw payload.
  return JSON.stringify(renderEmail(email, mailbox ?? {}));
}

export interface PostOptions {
  /** The `webhook-id` header: the same on every attempt of one delivery. */
  messageId: string;
  now: Date;
  allowPrivate: boolean;
}

/** One signed POST; never throws (postJson classifies every failure). */
export async function postToWebhook(
  webhook: WebhookRow,
  body: string,
  options: PostOptions,
): Promise<PostResult> {
  const signature = await signatureHeaders(webhook.secret, options.messageId, options.now, body);
  return await postJson(webhook.url, body, {
    headers: { ...webhook.headers, "User-Agent": USER_AGENT, ...signature },
    timeoutMs: DELIVERY_TIMEOUT_MS,
    allowPrivate: options.allowPrivate,
  });
}
