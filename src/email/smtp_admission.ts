// Which SMTP sessions may open: one address holds at most its share of the connections (the
// total is smtp-server's own maxClients). Counts each session it let in until the session closes.
import { clientAddress, type ConnectionBounds, connectionGate } from "../net/connection_gate.ts";
import { type SmtpReply, TOO_MANY_FROM_ADDRESS } from "./smtp_reply.ts";

interface Session {
  id: string;
  remoteAddress: string;
}

export interface SmtpAdmission {
  /** Undefined lets the session in; otherwise the reply that turns it away. */
  admit(session: Session): SmtpReply | undefined;
  closed(session: Pick<Session, "id">): void;
}

export function smtpAdmission(bounds: ConnectionBounds): SmtpAdmission {
  const gate = connectionGate(bounds);
  /** Sessions let in, with the address they count against. */
  const admitted = new Map<string, string>();
  return {
    admit(session) {
      const ip = clientAddress(session.remoteAddress);
      if (gate.admit(ip) !== "admitted") return TOO_MANY_FROM_ADDRESS;
      admitted.set(session.id, ip);
    },
    closed(session) {
      const ip = admitted.get(session.id);
      if (ip === undefined) return;
      admitted.delete(session.id);
      gate.release(ip);
    },
  };
}
