// Accepting one message received over SMTP (CONTRACT section 9): parse it once, then for each
// mailbox recipient one ledger command that debits the owner, stores the attachments, queues the
// delivery and appends EmailReceived in one transaction. The SMTP answer comes after every commit.
//
// SMTP has one DATA answer for all recipients, so the outcomes are folded into one:
// - any fault (database down, ledger queue full): 451, so the sender tries again; a recipient that
//   was accepted before the fault is recognised on that retry by its Message-ID and not charged or
//   delivered twice;
// - otherwise, at least one mailbox accepted: 250. A mailbox whose owner could no longer pay at
//   DATA time (the balance fell after RCPT, or the mail carries attachments and costs 5) does not
//   get it; its call log shows the refusal (status 402, cost 0). The RCPT check already turned
//   away owners below 2 credits, so this is the rare case;
// - no mailbox accepted: 452 when an owner lacked credits (worth retrying later), else 550.
import type { Sql, Tx } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Clock } from "../clock.ts";
import { type Decision, failure, INSUFFICIENT_CREDITS as NO_CREDITS, textReply } from "../ledger/command.ts";
import type { WalletRow } from "../../projections/wallets.ts";
import { findMailboxWebhook } from "../../projections/webhooks.ts";
import { enqueueDelivery } from "../webhooks/outbox.ts";
import { storeAttachment } from "../attachments/store.ts";
import type { AttachmentRef } from "../attachments/signed_link.ts";
import { randomId } from "../ids.ts";
import { type ParsedEmail, parseEmailSafely } from "./parse.ts";
import {
  duplicateKey,
  emailCost,
  emailReceivedEvent,
  type MailboxContext,
  queuedEmailOf,
} from "./payload.ts";
import {
  ACCEPTED,
  INSUFFICIENT_CREDITS,
  MAILBOX_UNKNOWN,
  refusedMessage,
  type SmtpReply,
  TEMPORARY_FAILURE,
} from "./smtp_reply.ts";
import { logError } from "../log.ts";

export interface EmailServices {
  sql: Sql;
  ledger: Ledger;
  clock: Clock;
  mailDomain: string;
}

export interface ReceivedMessage {
  raw: Uint8Array;
  /** RCPT TO addresses that passed the recipient check. */
  recipients: string[];
  /** performance.now() when DATA ended, for the call log's response time. */
  startedAt: number;
}

/** What became of the mail for one recipient. */
export type MailboxOutcome = "accepted" | "duplicate" | "unknown" | "insufficient" | "fault";

/** The status the ledger's reply carries for an accepted email; internal, like the reply itself. */
const ACCEPTED_STATUS = 250;
const UNKNOWN_STATUS = 550;
const REFUSED_STATUS = 554;

/** Parses and accepts a message for every recipient; never throws. */
export async function acceptMessage(services: EmailServices, message: ReceivedMessage): Promise<SmtpReply> {
  const receivedAt = services.clock.now();
  const generatedId = `<${randomId(24)}@${services.mailDomain}>`;
  const parsed = await parseEmailSafely(message.raw, { generateMessageId: () => generatedId });
  const recipients = [...new Set(message.recipients.map((address) => address.toLowerCase()))];
  if (!parsed.ok) {
    const reply = refusedMessage(parsed.reason);
    if (reply.code >= 500) await logRefusal(services, recipients, parsed.reason, message.startedAt);
    return reply;
  }
  const email = parsed.email;
  // Mail without a Message-ID got a fresh one: two copies of it cannot be told apart from two mails.
  const deduplicate = email.messageId !== generatedId;
  const settled = await Promise.allSettled(recipients.map((recipient) =>
    acceptForMailbox(services, email, {
      recipient,
      receivedAt,
      size: message.raw.byteLength,
      startedAt: message.startedAt,
      deduplicate,
    })
  ));
  const outcomes = settled.map((result) => {
    if (result.status === "fulfilled") return result.value;
    logError("email not accepted", result.reason);
    return "fault" as const;
  });
  return replyFor(outcomes);
}

/** The one SMTP answer for all recipients (see the top of this module). */
export function replyFor(outcomes: MailboxOutcome[]): SmtpReply {
  if (outcomes.includes("fault")) return TEMPORARY_FAILURE;
  if (outcomes.some((outcome) => outcome === "accepted" || outcome === "duplicate")) return ACCEPTED;
  if (outcomes.includes("insufficient")) return INSUFFICIENT_CREDITS;
  return MAILBOX_UNKNOWN;
}

interface Delivery {
  recipient: string;
  receivedAt: Date;
  size: number;
  startedAt: number;
  deduplicate: boolean;
}

async function acceptForMailbox(
  services: EmailServices,
  email: ParsedEmail,
  delivery: Delivery,
): Promise<MailboxOutcome> {
  const webhook = await findMailboxWebhook(services.sql, delivery.recipient);
  if (!webhook) return "unknown";
  const key = delivery.deduplicate ? await duplicateKey(delivery.recipient, email.messageId) : undefined;
  const result = await services.ledger.run({
    walletId: webhook.wallet_id,
    // The price as the webhook reads now; decide settles it again under the lock.
    cost: emailCost(webhook.include_attachments, email.attachments.length),
    call: { method: "SMTP", path: delivery.recipient, endpoint: "email", startedAt: delivery.startedAt },
    // The fingerprint is the key itself: the same Message-ID to the same mailbox is the same mail.
    ...(key ? { idempotency: { key, fingerprint: key } } : {}),
    decide: (tx, wallet, now) =>
      decideAcceptance(tx, wallet, now, { email, delivery, webhookId: webhook.webhook_id }),
  });
  if (result.kind === "unauthorized") return "unknown";
  switch (result.reply.status) {
    case ACCEPTED_STATUS:
      return result.replayed ? "duplicate" : "accepted";
    case 402:
      return "insufficient";
    case UNKNOWN_STATUS:
      return "unknown";
  }
  throw new Error(`Unexpected ledger reply ${result.reply.status} for mailbox "${delivery.recipient}"`);
}

interface Acceptance {
  email: ParsedEmail;
  delivery: Delivery;
  webhookId: string;
}

/** Runs under the owner's lock: the mailbox read again, the price settled, files stored, delivery queued. */
async function decideAcceptance(
  tx: Tx,
  wallet: WalletRow,
  now: Date,
  acceptance: Acceptance,
): Promise<Decision> {
  const { email, delivery } = acceptance;
  const webhook = await findMailboxWebhook(tx, delivery.recipient);
  // Deleted, or even handed to another webhook, between RCPT and now.
  if (!webhook || webhook.wallet_id !== wallet.wallet_id || webhook.webhook_id !== acceptance.webhookId) {
    return { ...failure(UNKNOWN_STATUS, "Mailbox does not exist"), charge: 0 };
  }
  const cost = emailCost(webhook.include_attachments, email.attachments.length);
  if (cost > wallet.balance) return { ...failure(402, NO_CREDITS), charge: 0 };

  const attachments: AttachmentRef[] = [];
  if (webhook.include_attachments) {
    for (const file of email.attachments) {
      const ref: AttachmentRef = {
        owner: wallet.wallet_id,
        id: randomId(24),
        filename: file.filename,
        size: file.size,
        contentType: file.contentType,
      };
      await storeAttachment(tx, { walletId: wallet.wallet_id, ...ref, content: file.content }, now);
      attachments.push(ref);
    }
  }
  const mailbox: MailboxContext = {
    webhookId: webhook.webhook_id,
    recipient: delivery.recipient,
    walletHash: wallet.wallet_id,
    receivedAt: delivery.receivedAt,
    attachments,
  };
  const deliveryId = await enqueueDelivery(tx, {
    walletId: wallet.wallet_id,
    webhookId: webhook.webhook_id,
    kind: "email",
    payload: queuedEmailOf(email, mailbox),
    cost,
    now,
  });
  return {
    reply: textReply(ACCEPTED_STATUS, "Message accepted"),
    events: [emailReceivedEvent(email, mailbox, { deliveryId, size: delivery.size })],
    charge: cost,
  };
}

/**
 * A refused message leaves a free entry in each owner's call log, so the owner can see why a mail
 * never arrived. A fault here is only logged: the sender gets the refusal either way.
 */
async function logRefusal(services: EmailServices, recipients: string[], reason: string, startedAt: number) {
  await Promise.all(recipients.map(async (recipient) => {
    try {
      const webhook = await findMailboxWebhook(services.sql, recipient);
      if (!webhook) return;
      await services.ledger.run({
        walletId: webhook.wallet_id,
        cost: 0,
        call: { method: "SMTP", path: recipient, endpoint: "email", startedAt },
        decide: () => ({ ...failure(REFUSED_STATUS, `Message refused: ${reason}`), charge: 0 }),
      });
    } catch (error) {
      logError("email refusal not logged", error);
    }
  }));
}
