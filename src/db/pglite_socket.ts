// The embedded PGlite as a socket for postgres.js (its `socket` option), in this process: the
// driver's bytes go to PGlite's wire protocol and its answers come back as `data`, with no TCP and
// no query queue between them. Served over a local TCP server instead (pglite-socket), each call's
// buffers and promises lived long enough to be promoted to V8's old space: 112 MB promoted per 1,000
// KV calls, against 40 MB this way, and about 45 MB less resident memory after them.
import { EventEmitter } from "node:events";
import { Buffer } from "node:buffer";
import type { PGlite } from "@electric-sql/pglite";

/** The protocol version word of a StartupMessage (3.0), the one message without a type byte. */
const PROTOCOL_3 = 196_608;
/** The code of a CancelRequest, sent on a connection of its own: PGlite cannot cancel, so it ends it. */
const CANCEL_REQUEST = 80_877_102;

/**
 * A socket per connection the driver opens. PGlite is a single backend, so the pool must keep one
 * connection (`max: 1`): two sessions' statements would interleave in one backend.
 */
export function pgliteSocketFactory(db: PGlite): () => PgliteSocket {
  return () => new PgliteSocket(db);
}

export class PgliteSocket extends EventEmitter {
  readyState: "open" | "closed" = "open";
  #db: PGlite;
  #started = false;
  /** Bytes written that do not yet make a whole message. */
  #partial: Uint8Array = new Uint8Array(0);
  /** Whole messages waiting for PGlite, in order. */
  #waiting: Uint8Array[] = [];
  #running = false;

  constructor(db: PGlite) {
    super();
    this.#db = db;
  }

  write(chunk: Uint8Array, callback?: (error?: Error) => void): boolean {
    if (this.readyState !== "open") {
      queueMicrotask(() => callback?.(new Error("The embedded database connection is closed")));
      return false;
    }
    const messages = this.#takeWholeMessages(chunk);
    if (messages) this.#waiting.push(messages);
    if (!this.#running) void this.#run();
    if (callback) queueMicrotask(() => callback());
    return true;
  }

  /** The driver ends with a Terminate message; the session ends here instead (PGlite stays open). */
  end(_data?: Uint8Array): this {
    void this.#close();
    return this;
  }

  destroy(): this {
    void this.#close();
    return this;
  }

  // Flow control is for COPY streams, which the service does not use on the embedded database.
  pause(): this {
    return this;
  }

  resume(): this {
    return this;
  }

  /** Cuts `chunk` (after what was left over) into whole messages, keeping the rest for later. */
  #takeWholeMessages(chunk: Uint8Array): Uint8Array | undefined {
    let bytes = chunk;
    if (this.#partial.length) {
      bytes = new Uint8Array(this.#partial.length + chunk.length);
      bytes.set(this.#partial);
      bytes.set(chunk, this.#partial.length);
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let end = 0;
    if (!this.#started) {
      if (bytes.length >= 8 && view.getInt32(4) === CANCEL_REQUEST) {
        void this.#close();
        return undefined;
      }
      // The StartupMessage is `length, version`; every later message is `type, length`.
      if (bytes.length < 8 || view.getInt32(4) !== PROTOCOL_3 || view.getInt32(0) > bytes.length) {
        this.#partial = bytes;
        return undefined;
      }
      this.#started = true;
      end = view.getInt32(0);
    }
    while (bytes.length - end >= 5 && end + 1 + view.getInt32(end + 1) <= bytes.length) {
      end += 1 + view.getInt32(end + 1);
    }
    this.#partial = bytes.subarray(end);
    return end ? bytes.subarray(0, end) : undefined;
  }

  async #run() {
    this.#running = true;
    try {
      while (this.#waiting.length && this.readyState === "open") {
        const messages = this.#waiting.shift()!;
        const answer: Uint8Array[] = [];
        await this.#db.runExclusive(() =>
          this.#db.execProtocolRawStream(messages, {
            // A view into PGlite's buffer, reused by the next call: copied before the driver reads it.
            onRawData: (data) => void answer.push(Buffer.from(data)),
          })
        );
        if (answer.length && this.readyState === "open") {
          this.emit("data", answer.length === 1 ? answer[0] : Buffer.concat(answer));
        }
      }
    } catch (error) {
      this.emit("error", error);
      await this.#close(true);
    } finally {
      this.#running = false;
    }
  }

  /** A transaction the driver left open is rolled back, so that the next session starts clean. */
  async #close(hadError = false) {
    if (this.readyState === "closed") return;
    this.readyState = "closed";
    this.#waiting = [];
    this.#partial = new Uint8Array(0);
    try {
      if (!this.#db.closed && this.#db.isInTransaction()) await this.#db.exec("ROLLBACK");
    } catch {
      // The database is closing or broken: the next session finds out for itself.
    } finally {
      queueMicrotask(() => this.emit("close", hadError));
    }
  }
}
