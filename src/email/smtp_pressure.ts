// Which SMTP sessions give way when the receiver is crowded, decided from a snapshot of the open
// sessions. Pure. Idle means no progress in a mail transaction (MAIL, RCPT, DATA and its bytes):
// a client that only sends NOOP or RSET holds a session without using it.

export interface OpenSession {
  id: string;
  /** The client, as senderAddress() names it. */
  address: string;
  /** Since the session opened or last made progress. */
  idleMs: number;
  /** The receiver owes this session an answer (a recipient check, a message being accepted). */
  busy: boolean;
}

export interface CrowdPolicy {
  maxConnections: number;
  maxConnectionsPerIp: number;
  /** From this many open sessions on, the receiver is under pressure. */
  pressureConnections: number;
  /** Under pressure, a session idle this long is closed (only when shorter than the idle timeout). */
  pressureIdleMs: number;
  /** The idle timeout without pressure (RFC 5321's 5 minutes). */
  idleTimeoutMs: number;
  /** A newcomer to a full receiver takes the place only of a session idle at least this long. */
  replaceableAfterMs: number;
}

/** A newcomer to a full receiver takes the place of a session idle for 2 s: no client between two
 * commands of a transaction waits that long, and a new sender never waits for an idle one. */
export const REPLACEABLE_AFTER_MS = 2_000;

export function underPressure(open: number, policy: CrowdPolicy): boolean {
  return open >= policy.pressureConnections;
}

/**
 * The sessions to close now because the receiver is under pressure and they are idle past the short
 * idle time, in the order they give way: addresses holding the most sessions first, then the
 * longest idle.
 */
export function idleUnderPressure(sessions: OpenSession[], policy: CrowdPolicy): string[] {
  if (!underPressure(sessions.length, policy) || policy.pressureIdleMs >= policy.idleTimeoutMs) return [];
  return inOrderOfGivingWay(sessions, policy.pressureIdleMs).map((session) => session.id);
}

/** The session whose place a newcomer to a full receiver takes, or undefined when none may give it. */
export function sessionToReplace(sessions: OpenSession[], policy: CrowdPolicy): string | undefined {
  return inOrderOfGivingWay(sessions, policy.replaceableAfterMs)[0]?.id;
}

/** Whether a client that already holds `held` sessions may open another (when there is room). */
export function withinAddressShare(held: number, policy: CrowdPolicy): boolean {
  return held < policy.maxConnectionsPerIp;
}

function inOrderOfGivingWay(sessions: OpenSession[], minIdleMs: number): OpenSession[] {
  const held = new Map<string, number>();
  for (const session of sessions) held.set(session.address, (held.get(session.address) ?? 0) + 1);
  return sessions
    .filter((session) => !session.busy && session.idleMs >= minIdleMs)
    .sort((a, b) => held.get(b.address)! - held.get(a.address)! || b.idleMs - a.idleMs);
}
