// A TCP proxy on 127.0.0.1 between the service and Postgres that breaks the database the ways a
// network and a restart do: it cuts every open connection, refuses new ones for a while (its port
// closes, so connecting fails with ECONNREFUSED as with a stopped server), delays traffic, and
// stalls a client at a chosen message so that a fault can strike the session at that point.

export interface FaultProxy {
  port: number;
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  urlFor(databaseUrl: string): string;
  /** Connections open now. */
  readonly open: number;
  /** Closes every open connection on both sides; new ones still go through. */
  cut(): void;
  /** Stops accepting: new connections are refused until accept(). Open ones are left as they are. */
  refuse(): void;
  /** Accepts connections again on the same port. */
  accept(): void;
  /** Delays every chunk by `ms` in each direction (0: none), keeping their order. */
  setLatency(ms: number): void;
  /**
   * Once: the first client chunk containing `text`, and everything that client sends after it, is
   * never delivered, so the server sees an idle session. Resolves when that chunk arrives.
   */
  stallOn(text: string): Promise<void>;
  close(): Promise<void>;
}

interface Link {
  client: Deno.TcpConn;
  server: Deno.TcpConn;
  closed: boolean;
  stalled: boolean;
}

export function startFaultProxy(target: { hostname: string; port: number }): FaultProxy {
  let listener: Deno.TcpListener | undefined = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const links = new Set<Link>();
  let latencyMs = 0;
  let stall: { text: string; reached: () => void } | undefined;
  let accepting = acceptLoop(listener);

  async function acceptLoop(current: Deno.TcpListener) {
    try {
      for await (const client of current) {
        let server: Deno.TcpConn;
        try {
          server = await Deno.connect(target);
        } catch {
          client.close();
          continue;
        }
        const link: Link = { client, server, closed: false, stalled: false };
        links.add(link);
        Promise.all([pipe(link, client, server), pipe(link, server, client)]).finally(() => shut(link));
      }
    } catch {
      // refuse() or close() closed the listener.
    }
  }

  /** Copies one direction, each chunk released `latencyMs` after it arrived. */
  async function pipe(link: Link, from: Deno.TcpConn, to: Deno.TcpConn) {
    const buffer = new Uint8Array(64 * 1024);
    let writing = Promise.resolve();
    try {
      while (!link.closed) {
        const n = await from.read(buffer);
        if (n === null) break;
        const chunk = buffer.slice(0, n);
        if (from === link.client && stalls(link, chunk)) continue;
        const due = performance.now() + latencyMs;
        // Chained: order is kept, and reading goes on while earlier chunks wait.
        writing = writing.then(async () => {
          const wait = due - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          if (!link.closed) await writeAll(to, chunk);
        });
      }
      await writing;
    } catch {
      // The other side went away, or cut() closed this one.
    }
    shut(link);
  }

  function stalls(link: Link, chunk: Uint8Array): boolean {
    if (!link.stalled && stall && new TextDecoder().decode(chunk).includes(stall.text)) {
      link.stalled = true;
      stall.reached();
      stall = undefined;
    }
    return link.stalled;
  }

  function shut(link: Link) {
    if (link.closed) return;
    link.closed = true;
    links.delete(link);
    for (const conn of [link.client, link.server]) {
      try {
        conn.close();
      } catch { /* already closed */ }
    }
  }

  return {
    port,
    urlFor(databaseUrl) {
      const url = new URL(databaseUrl);
      url.hostname = "127.0.0.1";
      url.port = String(port);
      return url.toString();
    },
    get open() {
      return links.size;
    },
    cut() {
      for (const link of [...links]) shut(link);
    },
    refuse() {
      listener?.close();
      listener = undefined;
    },
    accept() {
      if (listener) return;
      listener = Deno.listen({ hostname: "127.0.0.1", port });
      accepting = acceptLoop(listener);
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    stallOn(text) {
      return new Promise((reached) => stall = { text, reached });
    },
    async close() {
      listener?.close();
      listener = undefined;
      for (const link of [...links]) shut(link);
      await accepting.catch(() => {});
    },
  };
}

async function writeAll(conn: Deno.TcpConn, bytes: Uint8Array) {
  let offset = 0;
  while (offset < bytes.length) offset += await conn.write(bytes.subarray(offset));
}
