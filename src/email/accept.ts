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
// - no mailbox accepted: 452 when an owner lacked credits or attachment storage (worth retrying
//   later: files expire), else 550.
import type { Sql } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Clock } from "../clock.ts";
import { findMailbox } from "../../projections/webhooks.ts";
import { newDeliveryId, newMessageId } from "../webhooks/mod.ts";
import { randomId } from "../ids.ts";
import { type ParsedEmail, parseEmailSafely } from "./parse.ts";
import { duplicateKey } from "./payload.ts";
import { acceptEmailCommand, refusedEmailCommand } from "./commands.ts";
import {
  ACCEPTED,
  MAILBOX_FULL,
  MAILBOX_UNKNOWN,
  NO_CREDITS_REPLY,
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
  /** Bytes of attachments a wallet may have stored (ATTACHMENT_STORAGE_PER_WALLET); default 256 MiB. */
  attachmentStorageLimit?: number;
}

export interface ReceivedMessage {
  raw: Uint8Array;
  /** RCPT TO addresses that passed the recipient check. */
  recipients: string[];
  /** The SMTP client as senderAddress() names it: whose share of the parse workers it takes. */
  sender?: string;
  /** performance.now() when DATA ended, for the call log's response time. */
  startedAt: number;
}

/** What became of the mail for one recipient. */
export type MailboxOutcome = "accepted" | "duplicate" | "unknown" | "insufficient" | "full" | "fault";

/** Parses and accepts a message for every recipient; never throws. */
export async function acceptMessage(services: EmailServices, message: ReceivedMessage): Promise<SmtpReply> {
  const receivedAt = services.clock.now();
  const generatedId = `<${randomId(24)}@${services.mailDomain}>`;
  const parsed = await parseEmailSafely(message.raw, {
    generateMessageId: () => generatedId,
    sender: message.sender,
  });
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
  if (outcomes.includes("insufficient")) return NO_CREDITS_REPLY;
  if (outcomes.includes("full")) return MAILBOX_FULL;
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
  const mailbox = await findMailbox(services.sql, delivery.recipient);
  if (!mailbox) return "unknown";
  const result = await services.ledger.runBilled(acceptEmailCommand({
    email,
    recipient: delivery.recipient,
    mailbox: {
      walletId: mailbox.walletId,
      webhookId: mailbox.webhook.webhookId,
      includeAttachments: mailbox.webhook.mailbox.includeAttachments,
    },
    receivedAt: delivery.receivedAt,
    size: delivery.size,
    startedAt: delivery.startedAt,
    ...(delivery.deduplicate
      ? { duplicateKey: await duplicateKey(delivery.recipient, email.messageId) }
      : {}),
    ...(services.attachmentStorageLimit === undefined
      ? {}
      : { attachmentStorageLimit: services.attachmentStorageLimit }),
    ids: {
      deliveryId: newDeliveryId(),
      messageId: newMessageId(),
      attachmentIds: email.attachments.map(() => randomId(24)),
    },
  }));
  if (result.kind === "unauthorized") return "unknown";
  return result.replayed ? "duplicate" : result.outcome;
}

/**
 * A refused message leaves a free entry in each owner's call log, so the owner can see why a mail
 * never arrived. A fault here is only logged: the sender gets the refusal either way.
 */
async function logRefusal(services: EmailServices, recipients: string[], reason: string, startedAt: number) {
  await Promise.all(recipients.map(async (recipient) => {
    try {
      const mailbox = await findMailbox(services.sql, recipient);
      if (!mailbox) return;
      await services.ledger.runBilled(
        refusedEmailCommand({ walletId: mailbox.walletId, recipient, reason, startedAt }),
      );
    } catch (error) {
      logError("email refusal not logged", error);
    }
  }));
}
