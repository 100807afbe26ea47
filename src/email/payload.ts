// What one accepted email becomes for one mailbox (CONTRACT section 9): its price, the payload
// queued for the delivery worker and the EmailReceived fact. Pure: no database, clock or network.
import type { ParsedEmail } from "./parse.ts";
import type { QueuedEmail } from "../webhooks/mod.ts";
import type { AttachmentRef } from "../attachments/signed_link.ts";
import { type EventData, type NewEvent, newEvent } from "../../events/catalogue.ts";
import { sha256Hex } from "../ids.ts";

/** Spec section 8: an email costs 2 credits, 5 when it carries attachments that are forwarded. */
export const EMAIL_COST = 2;
export const EMAIL_WITH_ATTACHMENTS_COST = 5;

/** The price of `email` for a mailbox: attachments only cost extra when the webhook forwards them. */
export function emailCost(includeAttachments: boolean, attachmentCount: number): number {
  return includeAttachments && attachmentCount > 0 ? EMAIL_WITH_ATTACHMENTS_COST : EMAIL_COST;
}

export interface MailboxContext {
  webhookId: string;
  /** The mailbox address (lowercase). */
  recipient: string;
  /** The owner's wallet hash, which is its wallet id. */
  walletHash: string;
  receivedAt: Date;
  /** The stored attachments; empty when the webhook does not forward them. */
  attachments: AttachmentRef[];
}

/** The payload as the outbox keeps it; links to the attachments are signed at each attempt. */
export function queuedEmailOf(email: ParsedEmail, mailbox: MailboxContext): QueuedEmail {
  return {
    externalMessageId: email.messageId,
    receivedAt: mailbox.receivedAt.toISOString(),
    from: { email: email.from.email, name: email.from.name },
    to: { hash: mailbox.walletHash },
    webhookId: mailbox.webhookId,
    recipient: mailbox.recipient,
    cc: email.cc.map((address) => ({ email: address.email, name: address.name })),
    subject: email.subject,
    text: email.text,
    html: email.html,
    attachments: mailbox.attachments,
  };
}

export interface ReceivedFacts {
  deliveryId: string;
  /** The delivery's `webhook-id`, which the delivery history shows. */
  messageId?: string;
  /** Bytes of the raw message. */
  size: number;
}

/** The EmailReceived event: metadata of the mail, never its bodies or files. */
export function emailReceivedEvent(
  email: ParsedEmail,
  mailbox: MailboxContext,
  facts: ReceivedFacts,
): NewEvent {
  const stored = mailbox.attachments;
  const attachments: EventData<"EmailReceived">["attachments"] = email.attachments.map((file, index) => ({
    filename: file.filename,
    contentType: file.contentType,
    size: file.size,
    ...(stored[index] ? { id: stored[index].id } : {}),
  }));
  return newEvent("EmailReceived", {
    deliveryId: facts.deliveryId,
    webhookId: mailbox.webhookId,
    recipient: mailbox.recipient,
    messageId: email.messageId,
    from: email.from.email,
    subject: email.subject,
    size: facts.size,
    attachments,
    truncated: email.truncated,
    ...(facts.messageId !== undefined ? { webhookMessageId: facts.messageId } : {}),
  });
}

/**
 * The idempotency key that makes a repeated delivery of one message to one mailbox (a sender
 * retrying after a lost `250`) free and silent: the ledger answers it from the first acceptance for
 * 24 hours. 70 characters with a prefix, so it cannot meet an HTTP Idempotency-Key (1 to 64).
 */
export async function duplicateKey(recipient: string, messageId: string): Promise<string> {
  return "email:" + await sha256Hex(`${recipient.toLowerCase()}\n${messageId}`);
}
