// A small SMTP client for the task, on node:net so that each sender can bind its own loopback
// address (127.0.0.2, 127.0.0.3 ...) and count as its own client: whole messages with the time to
// the final reply, and sessions opened, greeted and then held idle.
import net from "node:net";

export interface SmtpTarget {
  port: number;
  /** The local address the connection comes from. */
  localAddress: string;
}

/** The server's answer to a message: the last reply's code and line; 0 when the connection failed. */
export interface SmtpResult {
  code: number;
  reply: string;
}

const COMMAND_TIMEOUT_MS = 60_000;

/** A connected session that reads one reply at a time (multi-line replies whole). */
class Session {
  #buffered = "";
  #waiting: ((reply: string) => void) | undefined;
  #closed = false;
  readonly socket: net.Socket;

  constructor(socket: net.Socket) {
    this.socket = socket;
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      this.#buffered += chunk;
      this.#deliver();
    });
    const end = () => {
      this.#closed = true;
      this.#deliver();
    };
    socket.on("close", end);
    socket.on("error", end);
  }

  get closed() {
    return this.#closed;
  }

  #deliver() {
    if (!this.#waiting) return;
    // A reply ends with a line "NNN text": a space after the code, not a dash.
    const match = /(^|\r\n)(\d{3})( [^\r\n]*)?\r\n/.exec(this.#buffered);
    if (match) {
      const end = match.index + match[0].length;
      const reply = this.#buffered.slice(0, end).trimEnd();
      this.#buffered = this.#buffered.slice(end);
      const resolve = this.#waiting;
      this.#waiting = undefined;
      resolve(reply.slice(reply.lastIndexOf("\n") + 1));
    } else if (this.#closed) {
      const resolve = this.#waiting;
      this.#waiting = undefined;
      resolve("000 connection closed");
    }
  }

  /** The next reply's last line, e.g. `250 2.0.0 Message accepted`. */
  reply(): Promise<string> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting = undefined;
        resolve("000 no reply in time");
      }, COMMAND_TIMEOUT_MS);
      this.#waiting = (line) => {
        clearTimeout(timer);
        resolve(line);
      };
      this.#deliver();
    });
  }

  async command(line: string | Uint8Array): Promise<string> {
    if (this.#closed) return "000 connection closed";
    this.socket.write(typeof line === "string" ? line + "\r\n" : line);
    return await this.reply();
  }

  close() {
    this.socket.destroy();
  }
}

const codeOf = (reply: string) => Number(reply.slice(0, 3)) || 0;

function connect(target: SmtpTarget): Promise<Session | string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port: target.port, localAddress: target.localAddress });
    socket.once("connect", () => resolve(new Session(socket)));
    socket.once("error", (error) => resolve(`000 ${error.message}`));
  });
}

/** Opens a session and reads the greeting; the greeting line when it is not 220 (or the failure). */
export async function openSession(target: SmtpTarget, ehlo = "noisy.example"): Promise<Session | SmtpResult> {
  const session = await connect(target);
  if (typeof session === "string") return { code: 0, reply: session };
  const greeting = await session.reply();
  if (codeOf(greeting) !== 220) {
    session.close();
    return { code: codeOf(greeting), reply: greeting };
  }
  const hello = await session.command(`EHLO ${ehlo}`);
  if (codeOf(hello) !== 250) {
    session.close();
    return { code: codeOf(hello), reply: hello };
  }
  return session;
}

export type { Session as SmtpSession };

/**
 * The message with SMTP's dot-stuffing and the final `.` line; `message` has CRLF line ends and
 * no line over 998 characters.
 */
export function dataBytes(message: string): Uint8Array {
  const stuffed = message.replace(/(^|\r\n)\./g, "$1..");
  return new TextEncoder().encode(stuffed + (stuffed.endsWith("\r\n") ? "" : "\r\n") + ".\r\n");
}

/** Sends one message on a session of its own; the reply that ended it (250 when accepted). */
export async function sendMessage(
  target: SmtpTarget,
  { envelope, data, signal }: {
    envelope: { from: string; to: string };
    data: Uint8Array;
    signal?: AbortSignal;
  },
): Promise<SmtpResult> {
  const opened = await openSession(target);
  if (!(opened instanceof Session)) return opened;
  const session = opened;
  // An abort cuts the session: the reply being waited for comes back as a closed connection.
  const cut = () => session.close();
  signal?.addEventListener("abort", cut, { once: true });
  try {
    for (const line of [`MAIL FROM:<${envelope.from}>`, `RCPT TO:<${envelope.to}>`]) {
      const reply = await session.command(line);
      if (codeOf(reply) !== 250) return { code: codeOf(reply), reply };
    }
    const go = await session.command("DATA");
    if (codeOf(go) !== 354) return { code: codeOf(go), reply: go };
    const done = await session.command(data);
    return { code: codeOf(done), reply: done };
  } finally {
    signal?.removeEventListener("abort", cut);
    session.close();
  }
}

/** A plain text message with the given headers; `Message-ID` made unique by the caller's id. */
export function plainMessage(
  fields: { from: string; to: string; subject: string; id: string; text: string },
) {
  return [
    `From: ${fields.from}`,
    `To: ${fields.to}`,
    `Subject: ${fields.subject}`,
    `Message-ID: <${fields.id}@noisy.example>`,
    `Date: ${new Date().toUTCString()}`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "",
    fields.text,
    "",
  ].join("\r\n");
}
