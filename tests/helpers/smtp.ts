// Sends mail to the service's SMTP port the way a sending mail server would: nodemailer for whole
// messages, and a bare socket for protocol checks (greeting, EHLO, single commands).
import nodemailer from "nodemailer";
import type { Service } from "./service.ts";

export interface SmtpOutcome {
  /** The DATA reply code, or the code of the command that failed (RCPT when all recipients were refused). */
  code: number;
  /** The whole reply line, e.g. `250 2.0.0 Message accepted`. */
  response: string;
  accepted: string[];
  rejected: string[];
  /** The RCPT replies of the rejected recipients. */
  rejectedResponses: string[];
}

/** Where mail goes: a service started by startService, or any receiver's port. */
export type SmtpTarget = Pick<Service, "smtpPort">;

function transport(service: SmtpTarget, options: Record<string, unknown> = {}) {
  return nodemailer.createTransport({
    host: "127.0.0.1",
    port: service.smtpPort,
    secure: false,
    ignoreTLS: true,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
    ...options,
  });
}

/** Sends one message (nodemailer's message options) and reports the server's answers; never throws on 4xx/5xx. */
export async function sendMail(
  service: SmtpTarget,
  message: Record<string, unknown>,
  transportOptions: Record<string, unknown> = {},
): Promise<SmtpOutcome> {
  const sender = transport(service, transportOptions);
  try {
    const info = await sender.sendMail({ from: "Ann Sender <ann@sender.example>", ...message });
    return {
      code: Number(String(info.response).slice(0, 3)),
      response: String(info.response),
      accepted: (info.accepted ?? []).map(String),
      rejected: (info.rejected ?? []).map(String),
      rejectedResponses: ((info as any).rejectedErrors ?? []).map((e: any) => String(e.response)),
    };
  } catch (error: any) {
    if (typeof error?.responseCode !== "number") throw error;
    const rejected = (error.rejected ?? []).map(String);
    return {
      code: error.responseCode,
      response: String(error.response),
      accepted: [],
      rejected,
      rejectedResponses: (error.rejectedErrors ?? []).map((e: any) => String(e.response)),
    };
  } finally {
    sender.close();
  }
}

/** Sends raw message bytes as they are, with the given envelope. */
export function sendRaw(service: SmtpTarget, raw: Uint8Array, to: string[], from = "ann@sender.example") {
  return sendMail(service, { envelope: { from, to }, raw });
}

/** A plain SMTP dialogue on a socket: the greeting, then one reply (possibly multi-line) per command. */
export async function smtpDialog(service: SmtpTarget, commands: string[]): Promise<string[]> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: service.smtpPort });
  const replies: string[] = [];
  const decoder = new TextDecoder();
  let buffered = "";
  const buf = new Uint8Array(65536);
  async function readReply(): Promise<string> {
    while (true) {
      // A reply ends with a line "NNN text" (a space after the code, not a dash).
      const match = /(^|\r\n)(\d{3}) [^\r\n]*\r\n/.exec(buffered);
      if (match) {
        const end = match.index + match[0].length;
        const reply = buffered.slice(0, end).trimEnd();
        buffered = buffered.slice(end);
        return reply;
      }
      const n = await conn.read(buf);
      if (n === null) return buffered || "(closed)";
      buffered += decoder.decode(buf.subarray(0, n));
    }
  }
  try {
    replies.push(await readReply());
    for (const command of commands) {
      await conn.write(new TextEncoder().encode(command + "\r\n"));
      replies.push(await readReply());
    }
    return replies;
  } finally {
    conn.close();
  }
}
