// The SMTP receiver (CONTRACT section 9): smtp-server in the service process, for MAIL_DOMAIN only.
// It speaks the protocol and bounds every client; recipients.ts decides RCPT TO and accept.ts the
// message. Each hook answers through one guard, so a fault answers 451 and never reaches the process.
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import { checkRecipient } from "./recipients.ts";
import { acceptMessage, type EmailServices } from "./accept.ts";
import {
  messageTooLarge,
  SESSION_TOO_LONG,
  smtpError,
  type SmtpReply,
  TEMPORARY_FAILURE,
} from "./smtp_reply.ts";
import { smtpAdmission } from "./smtp_admission.ts";
import type { ConnectionBounds } from "../net/connection_gate.ts";
import { logError } from "../log.ts";

/** Every bound of the receiver. */
export const SMTP_LIMITS = {
  /** CONTRACT section 9: "Messages over 10 MB: 552" (read as 10 MiB), advertised with SIZE. */
  maxMessageBytes: 10 * 1024 * 1024,
  maxRecipients: 50,
  /**
   * A whole session, however busy: a client trickling one byte a minute is never idle, so only a
   * total bound stops it. 10 MiB at a slow 20 KB/s still fits.
   */
  maxSessionMs: 10 * 60_000,
  /** On shutdown, how long open sessions may finish before they get 421. */
  closeTimeoutMs: 5_000,
  sessionSweepMs: 15_000,
} as const;

export interface SmtpConnectionLimits extends ConnectionBounds {
  /** Idle time allowed between two reads of a client's socket. */
  idleTimeoutMs: number;
}

export const SMTP_CONNECTION_DEFAULTS: SmtpConnectionLimits = {
  /** RFC 5321 section 4.5.3.2.7: a server should wait at least 5 minutes for the next command. */
  idleTimeoutMs: 5 * 60_000,
  /** Each client may hold a whole message in memory while it is read: 64 x 10 MiB at worst. */
  maxConnections: 64,
  maxConnectionsPerIp: 32,
};

export interface SmtpReceiverOptions extends EmailServices {
  port: number;
  hostname: string;
  /** PEM files for STARTTLS; without them STARTTLS is neither offered nor accepted. */
  tls?: { certPath: string; keyPath: string };
  /** Overrides SMTP_LIMITS.maxSessionMs (tests). */
  maxSessionMs?: number;
  /** Idle time and connection bounds (configuration); defaults in SMTP_CONNECTION_DEFAULTS. */
  limits?: Partial<SmtpConnectionLimits>;
}

export interface SmtpReceiver {
  port: number;
  /** Stops accepting, lets open sessions finish (at most closeTimeoutMs) and waits for every commit. */
  stop(): Promise<void>;
}

type Callback = (error?: Error | null) => void;

interface Connection {
  id: string;
  send(code: number, message: string): void;
  close(): void;
}

export async function startSmtpReceiver(options: SmtpReceiverOptions): Promise<SmtpReceiver> {
  const limits = SMTP_LIMITS;
  const maxSessionMs = options.maxSessionMs ?? limits.maxSessionMs;
  const connectionLimits = { ...SMTP_CONNECTION_DEFAULTS, ...options.limits };
  const admission = smtpAdmission(connectionLimits);
  const tls = options.tls ? await readTls(options.tls) : undefined;
  /** Start of each open session, by session id. */
  const sessionStarts = new Map<string, number>();
  /** Sessions whose message is being accepted: the lifetime bound waits for their answer. */
  const accepting = new Set<string>();
  const inFlight = new Set<Promise<unknown>>();

  /** Runs `work` and hands its refusal, or nothing, to smtp-server; a throw becomes 451. */
  function answer(callback: Callback, work: () => Promise<SmtpReply | undefined>) {
    Promise.resolve().then(work).then(
      (reply) => callback(reply && reply.code >= 400 ? smtpError(reply) : null),
      (error) => {
        logError("smtp command failed", error);
        callback(smtpError(TEMPORARY_FAILURE));
      },
    );
  }

  function receiveMessage(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    callback: (error?: Error | null, message?: string) => void,
  ) {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let done = false;
    const finish = (reply: SmtpReply) => {
      if (done) return;
      done = true;
      accepting.delete(session.id);
      if (reply.code >= 400) callback(smtpError(reply));
      else callback(null, reply.message);
    };
    stream.on("data", (chunk: Uint8Array) => {
      size += chunk.byteLength;
      // Past the limit the rest is only counted: smtp-server drains it and answers 552.
      if (size <= limits.maxMessageBytes) chunks.push(chunk);
      else chunks.length = 0;
    });
    stream.on("error", (error: unknown) => {
      logError("smtp data stream failed", error);
      finish(TEMPORARY_FAILURE);
    });
    stream.on("end", () => {
      if (done) return;
      if (stream.sizeExceeded || size > limits.maxMessageBytes) {
        return finish(messageTooLarge(limits.maxMessageBytes));
      }
      accepting.add(session.id);
      const recipients = session.envelope.rcptTo.map((rcpt) => rcpt.address);
      const work = acceptMessage(options, {
        raw: concat(chunks, size),
        recipients,
        startedAt: performance.now(),
      })
        .then(finish, (error) => {
          logError("email acceptance failed", error);
          finish(TEMPORARY_FAILURE);
        })
        .finally(() => inFlight.delete(work));
      inFlight.add(work);
    });
  }

  const server = new SMTPServer({
    // The greeting is `220 <name> ESMTP`; smtp-server writes both, so no banner repeats them.
    name: options.mailDomain,
    // An MX takes mail from anyone; AUTH would only invite password guessing.
    authOptional: true,
    disabledCommands: tls ? ["AUTH"] : ["AUTH", "STARTTLS"],
    ...(tls ?? {}),
    size: limits.maxMessageBytes,
    rejectOversized: true,
    maxRecipients: limits.maxRecipients,
    maxClients: connectionLimits.maxConnections,
    socketTimeout: connectionLimits.idleTimeoutMs,
    closeTimeout: limits.closeTimeoutMs,
    // PTR lookups would make every connection wait on DNS; nothing here uses the name.
    disableReverseLookup: true,
    logger: false,
    onConnect(session, callback) {
      const refused = admission.admit(session);
      if (refused) return callback(smtpError(refused));
      sessionStarts.set(session.id, performance.now());
      callback();
    },
    onRcptTo(address, _session, callback) {
      answer(callback, async () => {
        const check = await checkRecipient(options.sql, address.address, options.mailDomain);
        return check.ok ? undefined : check.reply;
      });
    },
    onData(stream, session, callback) {
      try {
        receiveMessage(stream, session, callback);
      } catch (error) {
        logError("smtp data failed", error);
        stream.resume();
        callback(smtpError(TEMPORARY_FAILURE));
      }
    },
    onClose(session) {
      sessionStarts.delete(session.id);
      admission.closed(session);
    },
  });
  // Socket errors of one client land here; they must never become an uncaught exception.
  server.on("error", (error) => logError("smtp connection error", error));

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });

  const sweep = setInterval(() => {
    const now = performance.now();
    const open = new Set<string>();
    for (const connection of server.connections as Set<unknown> as Set<Connection>) {
      open.add(connection.id);
      const start = sessionStarts.get(connection.id);
      if (start === undefined || accepting.has(connection.id) || now - start <= maxSessionMs) continue;
      connection.send(SESSION_TOO_LONG.code, SESSION_TOO_LONG.message);
      connection.close();
    }
    for (const id of sessionStarts.keys()) if (!open.has(id)) sessionStarts.delete(id);
  }, Math.min(limits.sessionSweepMs, maxSessionMs));

  const address = server.server.address();
  return {
    port: typeof address === "object" && address ? address.port : options.port,
    async stop() {
      clearInterval(sweep);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.allSettled([...inFlight]);
    },
  };
}

async function readTls(paths: { certPath: string; keyPath: string }): Promise<{ cert: string; key: string }> {
  const read = async (variable: string, path: string) => {
    try {
      return await Deno.readTextFile(path);
    } catch (error) {
      throw new Error(`Cannot read ${variable} "${path}": ${error instanceof Error ? error.message : error}`);
    }
  };
  return {
    cert: await read("SMTP_TLS_CERT", paths.certPath),
    key: await read("SMTP_TLS_KEY", paths.keyPath),
  };
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  const raw = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    raw.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return raw;
}
