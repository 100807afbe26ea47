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
