// A delivery receiver on a raw socket of 127.0.0.1: it notes when each request's first byte
// arrives (the start of a delivery, before any parsing), and answers 200 (`ok`), 400 at once
// (`refuse`: a final failure) or never (`silent`: accepts, reads, holds the connection open).

export type ReceiverMode = "ok" | "refuse" | "silent";

export interface ReceivedDelivery {
  /** performance.now() of the request's first byte. */
  firstByteAt: number;
  path: string;
  body: string;
}

export interface DeliveryReceiver {
  url: string;
  /** Requests whose body arrived whole. */
  readonly received: number;
  /** Connections held open without an answer. */
  readonly held: number;
  /** Changes the answer of the requests to come; leaving `silent` drops the held connections. */
  setMode(mode: ReceiverMode): void;
  close(): Promise<void>;
}

/** Head bytes read before a request is dropped, and body bytes kept (the rest is read and dropped). */
const MAX_HEAD_BYTES = 64 * 1024;
const KEPT_BODY_BYTES = 64 * 1024;
const HEADER_END = new TextEncoder().encode("\r\n\r\n");

function indexOf(haystack: Uint8Array, needle: Uint8Array, length: number): number {
  outer: for (let i = 0; i + needle.length <= length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

const ANSWERS: Record<Exclude<ReceiverMode, "silent">, string> = {
  ok: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
  refuse: "HTTP/1.1 400 Bad Request\r\nContent-Length: 7\r\nConnection: close\r\n\r\nrefused",
};

export function startReceiver(
  mode: ReceiverMode,
  onDelivery: (delivery: ReceivedDelivery) => void = () => {},
): DeliveryReceiver {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const held = new Set<Deno.Conn>();
  let current = mode;
  let received = 0;

  const close = (conn: Deno.Conn) => {
    open.delete(conn);
    held.delete(conn);
    try {
      conn.close();
    } catch { /* closed */ }
  };

  async function serve(conn: Deno.Conn) {
    open.add(conn);
    const head = new Uint8Array(MAX_HEAD_BYTES);
    const chunk = new Uint8Array(64 * 1024);
    let headLength = 0;
    let firstByteAt: number | undefined;
    try {
      // The head, up to its blank line; the first bytes of the body may come with it.
      let end = -1;
      while (end < 0) {
        const n = await conn.read(head.subarray(headLength));
        if (n === null || headLength + n >= head.length) return close(conn);
        firstByteAt ??= performance.now();
        headLength += n;
        end = indexOf(head, HEADER_END, headLength);
      }
      const headText = new TextDecoder().decode(head.subarray(0, end));
      const bodyLength = Number(/\r\ncontent-length:\s*(\d+)/i.exec(headText)?.[1] ?? 0);
      const kept: Uint8Array[] = [head.slice(end + HEADER_END.length, headLength)];
      let bodyRead = headLength - end - HEADER_END.length;
      while (bodyRead < bodyLength) {
        const n = await conn.read(chunk);
        if (n === null) return close(conn);
        if (bodyRead < KEPT_BODY_BYTES) kept.push(chunk.slice(0, n));
        bodyRead += n;
      }
      received++;
      const body = new Uint8Array(kept.reduce((sum, part) => sum + part.byteLength, 0));
      kept.reduce((at, part) => (body.set(part, at), at + part.byteLength), 0);
      onDelivery({
        firstByteAt: firstByteAt!,
        path: headText.split(" ")[1] ?? "",
        body: new TextDecoder().decode(body.subarray(0, Math.min(bodyLength, KEPT_BODY_BYTES))),
      });
      if (current === "silent") {
        held.add(conn);
        // Read on and answer nothing, until the peer goes or the mode changes.
        while ((await conn.read(chunk)) !== null) { /* discard */ }
        return close(conn);
      }
      await conn.write(new TextEncoder().encode(ANSWERS[current]));
      close(conn);
    } catch {
      close(conn);
    }
  }

  const accepting = (async () => {
    for await (const conn of listener) serve(conn);
  })().catch(() => {});

  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    get received() {
      return received;
    },
    get held() {
      return held.size;
    },
    setMode(next) {
      current = next;
      if (next !== "silent") { for (const conn of [...held]) close(conn); }
    },
    async close() {
      try {
        listener.close();
      } catch { /* closed */ }
      for (const conn of [...open]) close(conn);
      await accepting;
    },
  };
}
