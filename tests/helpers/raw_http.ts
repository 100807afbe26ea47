// HTTP/1.1 over a bare socket, byte by byte as a hostile client would send it: no Content-Length
// checks, no timeouts of its own, and a view of when the server closed the connection.

export interface RawConnection {
  /** Writes unless the server has closed; false when the write failed or the server closed. */
  write(data: string | Uint8Array): Promise<boolean>;
  /** Everything the server sent so far. */
  received(): string;
  /** The status of the first answer, once its line has arrived. */
  status(): number | undefined;
  /** Resolves when the server ends or resets the connection, with the milliseconds since open. */
  closed: Promise<number>;
  isClosed(): boolean;
  close(): void;
}

const encoder = new TextEncoder();

export async function openRaw(port: number): Promise<RawConnection> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const openedAt = performance.now();
  let text = "";
  let closedFlag = false;
  let mine = false;
  const closed = (async () => {
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(16 * 1024);
    try {
      while (true) {
        const n = await conn.read(buffer);
        if (n === null) break;
        text += decoder.decode(buffer.subarray(0, n), { stream: true });
      }
    } catch { /* reset by the server, or closed by us */ }
    closedFlag = true;
    if (!mine) {
      try {
        conn.close();
      } catch { /* already closed */ }
    }
    return performance.now() - openedAt;
  })();
  return {
    async write(data) {
      if (closedFlag) return false;
      try {
        await conn.write(typeof data === "string" ? encoder.encode(data) : data);
        return true;
      } catch {
        return false;
      }
    },
    received: () => text,
    status() {
      const match = text.match(/^HTTP\/1\.1 (\d{3}) /);
      return match ? Number(match[1]) : undefined;
    },
    closed,
    isClosed: () => closedFlag,
    close() {
      if (closedFlag) return;
      mine = true;
      try {
        conn.close();
      } catch { /* already closed */ }
    },
  };
}

/** Resolves after `ms`, or with the connection's close time if it closes first. */
export function closedWithin(connection: RawConnection, ms: number): Promise<number | "still open"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"still open">((resolve) => {
    timer = setTimeout(() => resolve("still open"), ms);
  });
  return Promise.race([connection.closed, timeout]).finally(() => clearTimeout(timer));
}

export interface FloodResult {
  /** Body bytes the client got to write before the server answered or closed. */
  sent: number;
  status: number | undefined;
  received: string;
}

/**
 * Sends `head` and then up to `maxBytes` of body in 64 KiB writes (chunked encoding when
 * `chunked`), stopping as soon as the server answers or closes. Gives up after `deadlineMs`.
 */
export async function flood(
  port: number,
  head: string,
  options: { maxBytes: number; chunked: boolean; deadlineMs?: number },
): Promise<FloodResult> {
  const connection = await openRaw(port);
  const piece = new Uint8Array(64 * 1024).fill(0x61);
  const framed = options.chunked
    ? concat(encoder.encode(`${piece.byteLength.toString(16)}\r\n`), piece, encoder.encode("\r\n"))
    : piece;
  let sent = 0;
  // A write the server never reads would wait forever: at the deadline the client hangs up.
  const deadline = setTimeout(() => connection.close(), options.deadlineMs ?? 30_000);
  try {
    if (await connection.write(head)) {
      while (sent < options.maxBytes && connection.status() === undefined) {
        if (!await connection.write(framed)) break;
        sent += piece.byteLength;
      }
    }
    await closedWithin(connection, 2_000);
  } finally {
    clearTimeout(deadline);
    connection.close();
  }
  return { sent, status: connection.status(), received: connection.received() };
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
