// Who holds the SMTP sessions, and who gives way (smtp_pressure.ts decides): one client address holds
// at most its share; under pressure a session idle past the short idle time is closed; a newcomer to a
// full receiver takes the place of an idle session, of the address holding the most first. Counts
// each session it let in (connection_gate.ts) until the session closes or is made to give way.
import { type ConnectionBounds, connectionGate } from "../net/connection_gate.ts";
import {
  type CrowdPolicy,
  idleUnderPressure,
  type OpenSession,
  sessionToReplace,
  withinAddressShare,
} from "./smtp_pressure.ts";
import { senderAddress } from "./sender_address.ts";
import {
  IDLE_WHILE_BUSY,
  type SmtpReply,
  TOO_MANY_CONNECTIONS,
  TOO_MANY_FROM_ADDRESS,
} from "./smtp_reply.ts";
import type { OpenConnection } from "./smtp_sessions.ts";

interface Session {
  id: string;
  remoteAddress: string;
}

interface Held {
  address: string;
  /** performance.now() of the session's opening or last progress. */
  progressAt: number;
  /** Answers the receiver owes the session. */
  owed: number;
}

export interface SmtpAdmission {
  /** Undefined lets the session in; otherwise the reply that turns it away. */
  admit(session: Session): SmtpReply | undefined;
  /** The session moved its mail transaction on (MAIL, RCPT, DATA or bytes of it). */
  progressed(id: string): void;
  /** The session waits for the receiver while `work` runs: it is not idle then. */
  owed<T>(id: string, work: Promise<T>): Promise<T>;
  closed(session: Pick<Session, "id">): void;
  /** Under pressure, closes the sessions idle past the short idle time; run every second or so. */
  relieve(): void;
  readonly open: number;
}

export interface AdmissionOptions {
  policy: CrowdPolicy;
  /** The open connection of a session, to tell it why it is closed. */
  connectionOf(id: string): OpenConnection | undefined;
  now?: () => number;
}

export function smtpAdmission(options: AdmissionOptions): SmtpAdmission {
  const { policy, connectionOf } = options;
  const now = options.now ?? (() => performance.now());
  const bounds: ConnectionBounds = {
    maxConnections: policy.maxConnections,
    maxConnectionsPerIp: policy.maxConnectionsPerIp,
  };
  const gate = connectionGate(bounds);
  const held = new Map<string, Held>();

  const snapshot = (at: number): OpenSession[] =>
    [...held].map(([id, session]) => ({
      id,
      address: session.address,
      idleMs: at - session.progressAt,
      busy: session.owed > 0,
    }));

  /** Frees the session's place at once and tells the client; its close comes later. */
  const giveWay = (id: string, reply: SmtpReply) => {
    const session = held.get(id);
    if (!session) return;
    held.delete(id);
    gate.release(session.address);
    // smtp-server closes the connection after any 421.
    connectionOf(id)?.send(reply.code, reply.message);
  };

  return {
    admit(session) {
      const address = senderAddress(session.remoteAddress);
      const at = now();
      let mine = 0;
      for (const other of held.values()) if (other.address === address) mine++;
      if (!withinAddressShare(mine, policy)) return TOO_MANY_FROM_ADDRESS;
      if (gate.open >= policy.maxConnections) {
        const replaced = sessionToReplace(snapshot(at), policy);
        if (replaced === undefined) return TOO_MANY_CONNECTIONS;
        giveWay(replaced, IDLE_WHILE_BUSY);
      }
      const admission = gate.admit(address);
      if (admission === "too many from this address") return TOO_MANY_FROM_ADDRESS;
      if (admission === "too many") return TOO_MANY_CONNECTIONS;
      held.set(session.id, { address, progressAt: at, owed: 0 });
    },
    progressed(id) {
      const session = held.get(id);
      if (session) session.progressAt = now();
    },
    async owed(id, work) {
      const session = held.get(id);
      if (session) session.owed++;
      try {
        return await work;
      } finally {
        if (session) {
          session.owed--;
          session.progressAt = now();
        }
      }
    },
    closed(session) {
      const mine = held.get(session.id);
      if (!mine) return;
      held.delete(session.id);
      gate.release(mine.address);
    },
    relieve() {
      for (const id of idleUnderPressure(snapshot(now()), policy)) giveWay(id, IDLE_WHILE_BUSY);
    },
    get open() {
      return gate.open;
    },
  };
}
