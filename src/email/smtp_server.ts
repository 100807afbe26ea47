// The SMTP receiver (CONTRACT section 9): smtp-server in the service process, for MAIL_DOMAIN only.
// It speaks the protocol and bounds every client; recipients.ts decides RCPT TO and accept.ts the
// message. Each hook answers through one guard, so a fault answers 451 and never reaches the process.
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { checkRecipient } from "./recipients.ts";
import { acceptMessage, type EmailServices } from "./accept.ts";
import { smtpError, type SmtpReply, TEMPORARY_FAILURE } from "./smtp_reply.ts";
import { type DataHandling, receiveMessage } from "./smtp_data.ts";
import { type OpenConnection, SessionLifetimes } from "./smtp_sessions.ts";
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

export async function startSmtpReceiver(options: SmtpReceiverOptions): Promise<SmtpReceiver> {
  const limits = SMTP_LIMITS;
  const lifetimes = new SessionLifetimes(options.maxSessionMs ?? limits.maxSessionMs);
  const connectionLimits = { ...SMTP_CONNECTION_DEFAULTS, ...options.limits };
  const admission = smtpAdmission(connectionLimits);
  const tls = options.tls ? await readTls(options.tls) : undefined;
  const handling: DataHandling = {
    maxMessageBytes: limits.maxMessageBytes,
    accept: (message) => acceptMessage(options, message),
    started: (id, work) => lifetimes.accepting(id, work),
  };

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
    ...sessionHooks(options, { lifetimes, admission, handling }),
  });
  // Socket errors of one client land here; they must never become an uncaught exception.
  server.on("error", (error) => logError("smtp connection error", error));
  await listen(server, options.port, options.hostname);

  const sweep = setInterval(
    () => lifetimes.sweep(server.connections as Set<unknown> as Set<OpenConnection>),
    Math.min(limits.sessionSweepMs, lifetimes.maxSessionMs),
  );
  const address = server.server.address();
  return {
    port: typeof address === "object" && address ? address.port : options.port,
    async stop() {
      clearInterval(sweep);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await lifetimes.settled();
    },
  };
}

interface SessionParts {
  lifetimes: SessionLifetimes;
  admission: ReturnType<typeof smtpAdmission>;
  handling: DataHandling;
}

/** What the receiver does at each step of a session: admit, check recipients, take the message. */
function sessionHooks(options: SmtpReceiverOptions, parts: SessionParts): Partial<SMTPServerOptions> {
  const { lifetimes, admission, handling } = parts;
  return {
    onConnect(session, callback) {
      const refused = admission.admit(session);
      if (refused) return callback(smtpError(refused));
      lifetimes.opened(session.id);
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
        receiveMessage(stream, session, callback, handling);
      } catch (error) {
        logError("smtp data failed", error);
        stream.resume();
        callback(smtpError(TEMPORARY_FAILURE));
      }
    },
    onClose(session) {
      lifetimes.closed(session.id);
      admission.closed(session);
    },
  };
}

function listen(server: SMTPServer, port: number, hostname: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
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
