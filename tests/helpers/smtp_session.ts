// An SMTP session held open on a socket, one command at a time, for tests that change something
// between two commands (the database goes away after RCPT and before DATA).

export interface SmtpSession {
  greeting: string;
  /** Sends one line and resolves with the whole reply (possibly multi-line). */
  send(line: string): Promise<string>;
  close(): void;
}

export async function openSmtpSession(target: { smtpPort: number }): Promise<SmtpSession> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: target.smtpPort });
  const decoder = new TextDecoder();
  const buf = new Uint8Array(65536);
  let buffered = "";

  async function readReply(): Promise<string> {
    while (true) {
      // A reply ends with a line "NNN text" (a space after the code, not a dash).
      const match = /(^|\r\n)(\d{3}) [^\r\n]*\r\n/.exec(buffered);
      if (match) {
        const end = match.index + match[0].length;
        const reply = buffered.slice(0, end).trimEnd();
        buffered = buffered.slice(end);
        return reply;
      }
      const n = await conn.read(buf);
      if (n === null) return buffered || "(closed)";
      buffered += decoder.decode(buf.subarray(0, n));
    }
  }

  const greeting = await readReply();
  return {
    greeting,
    async send(line) {
      await conn.write(new TextEncoder().encode(line + "\r\n"));
      return await readReply();
    },
    close() {
      try {
        conn.close();
      } catch { /* already closed */ }
    },
  };
}

/** A session held open from a chosen loopback address (127.0.0.x), through node:net. */
export interface SmtpSessionFrom extends SmtpSession {
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves when the server (or the client) closed the connection. */
  closed: Promise<void>;
  isClosed(): boolean;
}

export async function openSmtpSessionFrom(
  target: { smtpPort: number },
  localAddress: string,
): Promise<SmtpSessionFrom> {
  const net = await import("node:net");
  const socket = net.connect({ host: "127.0.0.1", port: target.smtpPort, localAddress });
  let text = "";
  let consumed = 0;
  let closedFlag = false;
  let wake = () => {};
  const closed = new Promise<void>((resolve) =>
    socket.on("close", () => {
      closedFlag = true;
      wake();
      resolve();
    })
  );
  socket.on("data", (chunk: Uint8Array) => {
    text += new TextDecoder().decode(chunk);
    wake();
  });
  socket.on("error", () => {/* a reset is a close here */});

  async function readReply(): Promise<string> {
    while (true) {
      // A reply ends with a line "NNN text" (a space after the code, not a dash).
      const match = /(^|\r\n)(\d{3}) [^\r\n]*\r\n/.exec(text.slice(consumed));
      if (match) {
        const end = consumed + match.index + match[0].length;
        const reply = text.slice(consumed, end).trimEnd();
        consumed = end;
        return reply;
      }
      if (closedFlag) return text.slice(consumed) || "(closed)";
      await new Promise<void>((resolve) => wake = resolve);
    }
  }

  const greeting = await readReply();
  return {
    greeting,
    async send(line) {
      socket.write(line + "\r\n");
      return await readReply();
    },
    close() {
      socket.destroy();
    },
    received: () => text,
    closed,
    isClosed: () => closedFlag,
  };
}
