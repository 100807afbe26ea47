// The SMTP receiver (CONTRACT section 9): smtp-server in the service process, for MAIL_DOMAIN only.
// It speaks the protocol and bounds every client; smtp_admission.ts decides who holds a session,
// recipients.ts decides RCPT TO and accept.ts the message; a sender whose messages keep being refused
// waits (refusal_pacing.ts). Each hook answers through one guard, so a fault answers 451 and never
// reaches the process.
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { checkRecipient } from "./recipients.ts";
import { acceptMessage, type EmailServices, type ReceivedMessage } from "./accept.ts";
import {
  isMessageRefusal,
  SENDER_SLOWED,
  smtpError,
  type SmtpReply,
  TEMPORARY_FAILURE,
} from "./smtp_reply.ts";
import { type DataHandling, receiveMessage } from "./smtp_data.ts";
import { type OpenConnection, SessionLifetimes } from "./smtp_sessions.ts";
import { type SmtpAdmission, smtpAdmission } from "./smtp_admission.ts";
import { REPLACEABLE_AFTER_MS } from "./smtp_pressure.ts";
import { senderAddress } from "./sender_address.ts";
import { RefusalPacing } from "./refusal_pacing.ts";
import type { ConnectionBounds } from "../net/connection_gate.ts";
import { logError } from "../log.ts";
import { recordSmtpReply, recordSmtpSession } from "../metrics/smtp_metrics.ts";

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
  /** From this many open sessions on, idle ones are closed after pressureIdleMs. */
  pressureConnections: number;
  /** The idle time under pressure: no progress in a mail transaction for this long. */
  pressureIdleMs: number;
}

export const SMTP_CONNECTION_DEFAULTS: SmtpConnectionLimits = {
  /** RFC 5321 section 4.5.3.2.7: a server should wait at least 5 minutes for the next command. */
  idleTimeoutMs: 5 * 60_000,
  /** Each client may hold a whole message in memory while it is read: 64 x 10 MiB at worst. */
  maxConnections: 64,
  /**
   * A quarter of the sessions: four addresses are needed to fill the receiver, and a relay sending
   * a burst (Postfix opens up to 20 connections to one destination) is not turned away.
   */
  maxConnectionsPerIp: 16,
  /** Three quarters of maxConnections. */
  pressureConnections: 48,
  /** Postfix's smtpd_timeout under stress. */
  pressureIdleMs: 10_000,
};

/** How often the receiver looks for idle sessions to close while it is under pressure. */
function pressureSweepMs(pressureIdleMs: number): number {
  return Math.min(1000, Math.max(100, Math.floor(pressureIdleMs / 4)));
}

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
  const connections = new Map<string, OpenConnection>();
  const admission = smtpAdmission({
    policy: { ...connectionLimits, replaceableAfterMs: REPLACEABLE_AFTER_MS },
    connectionOf: (id) => connections.get(id),
  });
  const pacing = new RefusalPacing();
  const tls = options.tls ? await readTls(options.tls) : undefined;
  const handling: DataHandling = {
    maxMessageBytes: limits.maxMessageBytes,
    accept: (message) => acceptPaced(options, pacing, message),
    started: (id, work) => {
      lifetimes.accepting(id, work);
      admission.owed(id, work).catch(() => {});
    },
    progressed: (id) => admission.progressed(id),
  };

  const server: SMTPServer = new SMTPServer({
    // The greeting is `220 <name> ESMTP`; smtp-server writes both, so no banner repeats them.
    name: options.mailDomain,
    // An MX takes mail from anyone; AUTH would only invite password guessing.
    authOptional: true,
    disabledCommands: tls ? ["AUTH"] : ["AUTH", "STARTTLS"],
    ...(tls ?? {}),
    size: limits.maxMessageBytes,
    rejectOversized: true,
    maxRecipients: limits.maxRecipients,
    // Sockets not yet admitted are cheap (they may not send before the greeting); the admission
    // counts the sessions and may make room for a newcomer, so it must see the one past the limit.
    maxClients: connectionLimits.maxConnections * 2,
    socketTimeout: connectionLimits.idleTimeoutMs,
    closeTimeout: limits.closeTimeoutMs,
    // PTR lookups would make every connection wait on DNS; nothing here uses the name.
    disableReverseLookup: true,
    logger: false,
    ...sessionHooks(options, {
      lifetimes,
      admission,
      handling,
      pacing,
      connections,
      openConnections: (): Iterable<OpenConnection> =>
        server.connections as Set<unknown> as Set<OpenConnection>,
    }),
  });
  // Socket errors of one client land here; they must never become an uncaught exception.
  server.on("error", (error) => logError("smtp connection error", error));
  await listen(server, options.port, options.hostname);

  const sweep = setInterval(
    () => lifetimes.sweep(server.connections as Set<unknown> as Set<OpenConnection>),
    Math.min(limits.sessionSweepMs, lifetimes.maxSessionMs),
  );
  const relief = setInterval(() => admission.relieve(), pressureSweepMs(connectionLimits.pressureIdleMs));
  const address = server.server.address();
  return {
    port: typeof address === "object" && address ? address.port : options.port,
    async stop() {
      clearInterval(sweep);
      clearInterval(relief);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await lifetimes.settled();
    },
  };
}

/**
 * Accepts a message unless its sender is being slowed, and counts a refusal against the sender with
 * the time it took (the parse's share of it).
 */
async function acceptPaced(
  services: EmailServices,
  pacing: RefusalPacing,
  message: ReceivedMessage,
): Promise<SmtpReply> {
  const sender = message.sender ?? "";
  if (pacing.slowed(sender)) return (recordSmtpReply(SENDER_SLOWED.code), SENDER_SLOWED);
  const started = performance.now();
  const reply = await acceptMessage(services, message);
  recordSmtpReply(reply.code);
  if (isMessageRefusal(reply)) pacing.refused(sender, performance.now() - started);
  return reply;
}

interface SessionParts {
  lifetimes: SessionLifetimes;
  admission: SmtpAdmission;
  handling: DataHandling;
  pacing: RefusalPacing;
  /** smtp-server's connection of each admitted session, so the admission can close it. */
  connections: Map<string, OpenConnection>;
  /** smtp-server's open connections (its hooks are given only the session). */
  openConnections(): Iterable<OpenConnection>;
}

/** What the receiver does at each step of a session: admit, check recipients, take the message. */
function sessionHooks(options: SmtpReceiverOptions, parts: SessionParts): Partial<SMTPServerOptions> {
  const { lifetimes, admission, handling, pacing, connections, openConnections } = parts;
  return {
    onConnect(session, callback) {
      const refused = admission.admit(session);
      if (refused) return callback(smtpError(refused));
      for (const connection of openConnections()) {
        if (connection.id === session.id) connections.set(session.id, connection);
      }
      lifetimes.opened(session.id);
      recordSmtpSession();
      callback();
    },
    onMailFrom(_address, session, callback) {
      admission.progressed(session.id);
      // Before the message is sent: a slowed sender spends no bandwidth on it.
      if (pacing.slowed(senderAddress(session.remoteAddress))) return callback(smtpError(SENDER_SLOWED));
      callback();
    },
    onRcptTo(address, session, callback) {
      admission.progressed(session.id);
      answer(callback, async () => {
        const check = await admission.owed(
          session.id,
          checkRecipient(options.sql, address.address, options.mailDomain),
        );
        return check.ok ? undefined : check.reply;
      });
    },
    onData(stream, session, callback) {
      admission.progressed(session.id);
      try {
        receiveMessage(stream, { session, callback, handling });
      } catch (error) {
        logError("smtp data failed", error);
        stream.resume();
        callback(smtpError(TEMPORARY_FAILURE));
      }
    },
    onClose(session) {
      connections.delete(session.id);
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
