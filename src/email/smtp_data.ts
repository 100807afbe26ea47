// The DATA of one SMTP message: read into memory up to the size limit (past it only counted, so
// smtp-server drains it and answers 552), then handed to acceptance; one answer, whatever happens.
import type { SMTPServerDataStream, SMTPServerSession } from "smtp-server";
import { messageTooLarge, smtpError, type SmtpReply, TEMPORARY_FAILURE } from "./smtp_reply.ts";
import type { ReceivedMessage } from "./accept.ts";
import { senderAddress } from "./sender_address.ts";
import { logError } from "../log.ts";
import { concat } from "../bytes.ts";

export interface DataHandling {
  maxMessageBytes: number;
  /** Accepts the whole message; its reply is the answer to DATA. */
  accept(message: ReceivedMessage): Promise<SmtpReply>;
  /** Told of the acceptance in progress, so the session bound and shutdown wait for it. */
  started(sessionId: string, work: Promise<unknown>): void;
  /** Told of each chunk of the message: the session is not idle. */
  progressed(sessionId: string): void;
}

export function receiveMessage(
  stream: SMTPServerDataStream,
  { session, callback, handling }: {
    session: SMTPServerSession;
    callback: (error?: Error | null, message?: string) => void;
    handling: DataHandling;
  },
): void {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let done = false;
  const finish = (reply: SmtpReply) => {
    if (done) return;
    done = true;
    if (reply.code >= 400) callback(smtpError(reply));
    else callback(null, reply.message);
  };
  stream.on("data", (chunk: Uint8Array) => {
    handling.progressed(session.id);
    size += chunk.byteLength;
    if (size <= handling.maxMessageBytes) chunks.push(chunk);
    else chunks.length = 0;
  });
  stream.on("error", (error: unknown) => {
    logError("smtp data stream failed", error);
    finish(TEMPORARY_FAILURE);
  });
  stream.on("end", () => {
    if (done) return;
    if (stream.sizeExceeded || size > handling.maxMessageBytes) {
      return finish(messageTooLarge(handling.maxMessageBytes));
    }
    const recipients = session.envelope.rcptTo.map((rcpt) => rcpt.address);
    const sender = senderAddress(session.remoteAddress);
    const work = handling.accept({
      raw: concat(chunks, size),
      recipients,
      sender,
      startedAt: performance.now(),
    })
      .then(finish, (error) => {
        logError("email acceptance failed", error);
        finish(TEMPORARY_FAILURE);
      });
    handling.started(session.id, work);
  });
}
