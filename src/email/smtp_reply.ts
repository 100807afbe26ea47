// The SMTP answers of the receiver (CONTRACT section 9), each with its RFC 3463 enhanced status
// code in the text: smtp-server's own enhanced codes stay off, so ours are the only ones shown.

export interface SmtpReply {
  code: number;
  /** The reply text after the code, starting with the enhanced status code. */
  message: string;
}

export const ACCEPTED: SmtpReply = { code: 250, message: "2.0.0 Message accepted" };
export const MAILBOX_UNKNOWN: SmtpReply = { code: 550, message: "5.1.1 Mailbox does not exist" };
export const NO_CREDITS_REPLY: SmtpReply = { code: 452, message: "4.2.2 Insufficient credits" };
/** Any fault of the service: nothing was changed (or, for a mail to several mailboxes, what was
 * accepted is recognised as a duplicate when the sender tries again). */
export const TEMPORARY_FAILURE: SmtpReply = {
  code: 451,
  message: "4.3.0 Temporary failure, try again later",
};
export const SESSION_TOO_LONG: SmtpReply = { code: 421, message: "4.4.2 Session too long, closing" };
/** The address already holds its share of connections (SMTP_MAX_CONNECTIONS_PER_IP). */
export const TOO_MANY_FROM_ADDRESS: SmtpReply = {
  code: 421,
  message: "4.7.0 Too many connections from your address, try again later",
};
/** Every session is taken (SMTP_MAX_CONNECTIONS) and none is idle enough to give way. */
export const TOO_MANY_CONNECTIONS: SmtpReply = {
  code: 421,
  message: "4.7.0 Too many connected clients, try again later",
};
/** An idle session closed to make room: the receiver is under pressure, or a newcomer needs its place. */
export const IDLE_WHILE_BUSY: SmtpReply = {
  code: 421,
  message: "4.4.2 Idle while the server is busy, closing",
};
/** The sender's messages keep being refused (refusal_pacing.ts): it must wait before the next one. */
export const SENDER_SLOWED: SmtpReply = {
  code: 451,
  message: "4.7.1 Too many refused messages from your address, try again later",
};
/** The owner's attachment storage would pass its bound (ATTACHMENT_STORAGE_PER_WALLET). */
export const MAILBOX_FULL: SmtpReply = {
  code: 452,
  message: "4.2.2 Mailbox full: attachment storage over its limit, try again later",
};

export function notOurDomain(mailDomain: string): SmtpReply {
  return { code: 550, message: `5.1.1 Not a mailbox of ${mailDomain}` };
}

export function badAddress(address: string): SmtpReply {
  return { code: 553, message: `5.1.3 Invalid recipient "${address.slice(0, 100)}"` };
}

export function messageTooLarge(limit: number): SmtpReply {
  return { code: 552, message: `5.3.4 Message too large: limit ${limit} bytes` };
}

/** A message the parser refused: permanent, except when the parser was only too busy. */
export function refusedMessage(reason: string): SmtpReply {
  // parse.ts words a full parser queue this way; it is the one refusal that passes with time.
  if (reason.startsWith("Parser busy")) return TEMPORARY_FAILURE;
  return { code: 554, message: `5.6.0 Message refused: ${reason}` };
}

/** Whether a reply refuses the message itself (the parser's or the pre-scan's 554). */
export function isMessageRefusal(reply: SmtpReply): boolean {
  return reply.code === 554;
}

/** The error smtp-server turns into the reply: `responseCode` and the text. */
export function smtpError(reply: SmtpReply): Error & { responseCode: number } {
  return Object.assign(new Error(reply.message), { responseCode: reply.code });
}
