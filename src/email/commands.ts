// What one accepted email is for one mailbox (CONTRACT section 9), decided purely under the owner's
// lock: the mailbox must still be this webhook's, the price is settled from its settings (2, or 5
// with forwarded attachments), the files it would store must fit the owner's attachment storage,
// and the acceptance is EmailReceived, the stored files and the queued delivery (held, with no
// attempt planned, while the webhook is paused: mail is still accepted and charged). SMTP outcomes
// are the command's own: accepted, unknown, insufficient or full.
import type { BilledCommand, CallDecision, Idempotency } from "../ledger/command.ts";
import { INSUFFICIENT_CREDITS } from "../ledger/command.ts";
import { read } from "../ledger/reads.ts";
import { webhookRead } from "../../projections/webhooks.ts";
import { webhookHealthRead, type WebhookHealthRow } from "../../projections/webhook_health.ts";
import { queueDelivery, type WebhookConfig } from "../webhooks/mod.ts";
import {
  attachmentUsageRead,
  DEFAULT_ATTACHMENT_STORAGE_PER_WALLET,
  type StoreAttachment,
} from "../attachments/store.ts";
import type { AttachmentRef } from "../attachments/signed_link.ts";
import type { ParsedEmail } from "./parse.ts";
import { emailCost, emailReceivedEvent, type MailboxContext, queuedEmailOf } from "./payload.ts";
import { boundedErrorText } from "../storable_text.ts";

export type AcceptOutcome = "accepted" | "unknown" | "insufficient" | "full";

export interface EmailArrival {
  email: ParsedEmail;
  /** The mailbox address (lowercase) and its webhook as the RCPT check found it. */
  recipient: string;
  mailbox: { walletId: string; webhookId: string; includeAttachments: boolean };
  receivedAt: Date;
  /** Bytes of the raw message. */
  size: number;
  /** performance.now() when DATA ended. */
  startedAt: number;
  /** The key that makes the same Message-ID to the same mailbox one mail; none for mail without one. */
  duplicateKey?: string;
  /** Fresh ids: the outbox row, its message id and one per attachment. */
  ids: { deliveryId: string; messageId: string; attachmentIds: string[] };
  /** Bytes of attachments the owner may have stored (ATTACHMENT_STORAGE_PER_WALLET). */
  attachmentStorageLimit?: number;
}

const MAILBOX_GONE = "Mailbox does not exist";
const ACCEPTED_REPLY = { status: 250, contentType: "text/plain; charset=utf-8", body: "Message accepted" };

function refusal(outcome: AcceptOutcome, status: number, error: string): CallDecision<AcceptOutcome> {
  return { outcome, log: { status, error }, charge: 0 };
}

/** The acceptance once the owner's lock is held and the mailbox read again. */
export function acceptEmail(
  arrival: EmailArrival,
  state: {
    wallet: { wallet_id: string; balance: number };
    webhook: WebhookConfig | undefined;
    health?: WebhookHealthRow;
    /** Bytes of attachments the owner has stored now. */
    storedBytes?: number;
  },
): CallDecision<AcceptOutcome> {
  const { email, recipient, ids } = arrival;
  const webhook = state.webhook;
  // Deleted, or turned into a scheduled webhook, between RCPT and now.
  if (!webhook || webhook.mode !== "mailbox" || webhook.email !== recipient) {
    return refusal("unknown", 550, MAILBOX_GONE);
  }
  const { includeAttachments } = webhook.mailbox;
  const cost = emailCost(includeAttachments, email.attachments.length);
  if (cost > state.wallet.balance) return refusal("insufficient", 402, INSUFFICIENT_CREDITS);

  const walletId = state.wallet.wallet_id;
  const stored = includeAttachments ? email.attachments : [];
  const addedBytes = stored.reduce((sum, file) => sum + file.size, 0);
  const storedBytes = state.storedBytes ?? 0;
  const limit = arrival.attachmentStorageLimit ?? DEFAULT_ATTACHMENT_STORAGE_PER_WALLET;
  // A full mailbox is a temporary refusal: files expire within 7 days, and the sender tries again.
  if (addedBytes > 0 && storedBytes + addedBytes > limit) {
    return refusal(
      "full",
      452,
      `Attachment storage full: ${storedBytes} bytes stored, ${addedBytes} more would pass the limit of ${limit}`,
    );
  }
  const attachments: AttachmentRef[] = stored.map((file, i) => ({
    owner: walletId,
    id: ids.attachmentIds[i],
    filename: file.filename,
    size: file.size,
    contentType: file.contentType,
  }));
  const files: StoreAttachment[] = stored.map((file, i) => ({
    type: "storeAttachment",
    file: { walletId, ...attachments[i], content: file.content },
  }));
  const mailbox: MailboxContext = {
    webhookId: webhook.webhookId,
    recipient,
    walletHash: walletId,
    receivedAt: arrival.receivedAt,
    attachments,
  };
  const delivery = queueDelivery({
    kind: "email",
    id: ids.deliveryId,
    walletId,
    webhookId: webhook.webhookId,
    messageId: ids.messageId,
    cost,
    payload: queuedEmailOf(email, mailbox),
  }, { held: state.health?.paused_at != null });
  const received = { deliveryId: ids.deliveryId, messageId: ids.messageId, size: arrival.size };
  return {
    outcome: "accepted",
    log: { status: 250 },
    charge: cost,
    events: [emailReceivedEvent(email, mailbox, received)],
    effects: [...files, delivery],
  };
}

/** A repeat of an accepted mail is answered from the first acceptance and not charged again. */
function deduplication(key: string): Idempotency<AcceptOutcome> {
  return {
    key,
    fingerprint: key,
    keep: (outcome) => outcome === "accepted" ? ACCEPTED_REPLY : undefined,
    replay: () => "accepted",
    mismatch: () => refusal("unknown", 550, MAILBOX_GONE),
  };
}

/** The billed command of one email to one mailbox. */
export function acceptEmailCommand(arrival: EmailArrival) {
  const { mailbox } = arrival;
  const key = { walletId: mailbox.walletId, webhookId: mailbox.webhookId };
  const reads = {
    webhook: read(webhookRead, key),
    health: read(webhookHealthRead, key),
    storedBytes: read(attachmentUsageRead, mailbox.walletId),
  };
  const command: BilledCommand<AcceptOutcome, typeof reads> = {
    walletId: mailbox.walletId,
    // The price as the webhook read at RCPT; decide settles it again under the lock.
    price: emailCost(mailbox.includeAttachments, arrival.email.attachments.length),
    call: { method: "SMTP", path: arrival.recipient, endpoint: "email", startedAt: arrival.startedAt },
    ...(arrival.duplicateKey ? { idempotency: deduplication(arrival.duplicateKey) } : {}),
    reads,
    decide: ({ wallet, reads }) =>
      acceptEmail(arrival, {
        wallet,
        webhook: reads.webhook,
        health: reads.health,
        storedBytes: reads.storedBytes,
      }),
    unpaid: () => refusal("insufficient", 402, INSUFFICIENT_CREDITS),
    // Past the wallet's allowance of refused mail the sender gets the same refusal, logged nowhere.
    throttled: (_wait, decided) => decided,
  };
  return command;
}

/** A refused message leaves a free entry in the owner's call log, so the owner sees why it never came. */
export function refusedEmailCommand(
  { walletId, recipient, reason, startedAt }: {
    walletId: string;
    recipient: string;
    reason: string;
    startedAt: number;
  },
): BilledCommand<void> {
  const error = boundedErrorText(`Message refused: ${reason}`);
  const logged = { outcome: undefined, log: { status: 554, error }, charge: 0 };
  return {
    walletId,
    price: 0,
    call: { method: "SMTP", path: recipient, endpoint: "email", startedAt },
    decide: () => logged,
    unpaid: () => logged,
    throttled: () => undefined,
  };
}
