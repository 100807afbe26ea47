// The exact JSON text of a webhook's delivery, pure: an email through the webhook's format with its
// attachment links signed at `now`, a scheduled run as is. Each attempt renders it again, and the
// deliveries view renders it the same way for one not sent yet, so what it shows is what will go.
import { renderEmail } from "./formats/mod.ts";
import type { DeliveryContent } from "./outbox.ts";
import type { EmailPayload } from "./payloads.ts";
import { signedAttachmentLink } from "../attachments/signed_link.ts";
import type { WebhookConfig } from "./config/config.ts";

/** How the service signs links: the server secret and PUBLIC_URL. */
export interface LinkSigning {
  serverSecret: string;
  publicUrl: string;
}

/** What a webhook delivers: an email or a scheduled run. */
export type WebhookContent = Extract<DeliveryContent, { kind: "email" | "scheduled" }>;

/**
 * The body POSTed for `content`: an email goes through the webhook's format with its attachment
 * links signed now (valid 1 hour), or an empty list when the webhook excludes them; a scheduled
 * run goes as is. Throws when the format cannot render the email.
 */
export function renderDeliveryBody(
  webhook: WebhookConfig,
  { content, signing, now }: { content: WebhookContent; signing: LinkSigning; now: Date },
): string {
  if (content.kind === "scheduled") return JSON.stringify(content.payload);
  const mailbox = webhook.mode === "mailbox" ? webhook.mailbox : undefined;
  const attachments = mailbox?.includeAttachments === false
    ? []
    : content.payload.attachments.map((ref) =>
      signedAttachmentLink(signing.serverSecret, { publicUrl: signing.publicUrl, ref, now })
    );
  const email: EmailPayload = { ...content.payload, attachments };
  // A webhook turned scheduled after the email came still gets it, as the raw payload.
  return JSON.stringify(renderEmail(email, mailbox ?? {}));
}
