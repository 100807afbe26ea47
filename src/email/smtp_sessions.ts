// The lifetime bound of SMTP sessions: a client trickling one byte a minute is never idle, so only
// a total bound stops it. Sessions whose message is being accepted wait for their answer; messages
// being accepted are kept, so a stopping receiver can wait for their commits.
import { SESSION_TOO_LONG } from "./smtp_reply.ts";

/** What the sweep needs of smtp-server's open connections. */
export interface OpenConnection {
  id: string;
  send(code: number, message: string): void;
  close(): void;
}

export class SessionLifetimes {
  /** Start of each open session, by session id. */
  readonly #starts = new Map<string, number>();
  /** Sessions whose message is being accepted: the lifetime bound waits for their answer. */
  readonly #accepting = new Set<string>();
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(readonly maxSessionMs: number) {}

  opened(id: string): void {
    this.#starts.set(id, performance.now());
  }

  closed(id: string): void {
    this.#starts.delete(id);
  }

  /** Tracks the acceptance of a session's message until `work` settles. */
  accepting(id: string, work: Promise<unknown>): void {
    this.#accepting.add(id);
    const tracked = work.finally(() => {
      this.#accepting.delete(id);
      this.#inFlight.delete(tracked);
    });
    this.#inFlight.add(tracked);
  }

  /** Closes the sessions over their lifetime with 421; forgets sessions no longer open. */
  sweep(connections: Iterable<OpenConnection>): void {
    const now = performance.now();
    const open = new Set<string>();
    for (const connection of connections) {
      open.add(connection.id);
      const start = this.#starts.get(connection.id);
      if (start === undefined || this.#accepting.has(connection.id) || now - start <= this.maxSessionMs) {
        continue;
      }
      connection.send(SESSION_TOO_LONG.code, SESSION_TOO_LONG.message);
      connection.close();
    }
    for (const id of this.#starts.keys()) if (!open.has(id)) this.#starts.delete(id);
  }

  /** Waits for every message being accepted. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }
}
