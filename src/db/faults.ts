// Which failures mean "the database cannot be reached right now" (as opposed to a bug or bad data),
// and the one error the rest of the service sees for them: the HTTP layer answers it with 503 and
// Retry-After, SMTP with 451, the background loops back off.

/** What became of the work when the database failed it. */
export type FaultOutcome =
  /** Nothing was written: the transaction never reached COMMIT (or the call never left the queue). */
  | "unchanged"
  /** COMMIT was sent, or the call was in a transaction when it ran out of time: it may have committed. */
  | "unknown";

export class DatabaseUnavailableError extends Error {
  constructor(readonly outcome: FaultOutcome, reason: string, options?: { cause?: unknown }) {
    super(`Database unavailable: ${reason}`, options);
    this.name = "DatabaseUnavailableError";
  }
}

/** Socket and driver codes of a connection that failed, was refused or is gone (postgres.js, node:net). */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ERR_STREAM_DESTROYED",
  "ERR_SOCKET_CLOSED",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
]);

/**
 * SQLSTATEs of a server that is going away or cannot take us now: class 08 (connection exception),
 * 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now (starting up or shutting
 * down), 53300 too many connections, and 25006 read_only_sql_transaction: a write reached a server
 * that takes none, a standby (or a primary being demoted) while the primary is gone or moving.
 * The service writes in every transaction it opens, so no call of ours is read-only by design.
 */
const UNAVAILABLE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300", "25006"]);
const MAX_CAUSE_DEPTH = 5;

/** True when `error` (or an error it wraps) says the database cannot be reached right now. */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && current instanceof Error; depth++) {
    if (current instanceof DatabaseUnavailableError) return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") {
      if (CONNECTION_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code)) return true;
      // Only a PostgresError carries a five-character SQLSTATE; class 08 is the connection's fault.
      if (current.name === "PostgresError" && code.startsWith("08")) return true;
    }
    if (current.name === "ConnectionRefused" || current.name === "ConnectionReset") return true;
    current = current.cause;
  }
  return false;
}

/**
 * `error` as a DatabaseUnavailableError when it is one of unavailability, else unchanged. An error
 * already classified keeps its outcome: it knew better where it happened.
 */
export function asDatabaseFault(error: unknown, outcome: FaultOutcome): unknown {
  if (error instanceof DatabaseUnavailableError || !isDatabaseUnavailable(error)) return error;
  return new DatabaseUnavailableError(outcome, describe(error), { cause: error });
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === "string" && !message.includes(code) ? `${code} ${message}` : message;
}
