// The RCPT TO check (CONTRACT section 9): the address must be a live mailbox of MAIL_DOMAIN and its
// owner must hold at least the price of a plain email. Whether the mail carries attachments (5
// credits) is only known after DATA, where the real price is settled under the wallet's lock.
import { z } from "zod";
import type { Queryable } from "../db/connect.ts";
import { findMailbox } from "../../projections/webhooks.ts";
import type { MailboxWebhook } from "../webhooks/mod.ts";
import { EMAIL_COST } from "./payload.ts";
import { badAddress, MAILBOX_UNKNOWN, NO_CREDITS_REPLY, notOurDomain, type SmtpReply } from "./smtp_reply.ts";

/** An RCPT TO address as the mailbox table keys it: lowercase, at most 254 characters (RFC 5321). */
export const RecipientAddress = z.string().trim().toLowerCase().max(254).regex(/^[^@\s]+@[^@\s]+$/);

export type RecipientCheck =
  | { ok: true; address: string; webhook: MailboxWebhook }
  | { ok: false; reply: SmtpReply };

/** The mailbox an address names, or the reply that refuses it. */
export async function checkRecipient(
  sql: Queryable,
  rawAddress: string,
  mailDomain: string,
): Promise<RecipientCheck> {
  const parsed = RecipientAddress.safeParse(rawAddress);
  if (!parsed.success) return { ok: false, reply: badAddress(rawAddress) };
  const address = parsed.data;
  if (address.slice(address.lastIndexOf("@") + 1) !== mailDomain) {
    return { ok: false, reply: notOurDomain(mailDomain) };
  }
  const mailbox = await findMailbox(sql, address);
  if (!mailbox) return { ok: false, reply: MAILBOX_UNKNOWN };
  if (mailbox.balance < EMAIL_COST) return { ok: false, reply: NO_CREDITS_REPLY };
  return { ok: true, address, webhook: mailbox.webhook };
}
