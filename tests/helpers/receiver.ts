// A local webhook receiver for tests: a Deno.serve on 127.0.0.1 that records every request and
// answers what the test tells it to (the service must run with UNSAFE_ALLOW_PRIVATE_WEBHOOKS=1).

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** performance.now() when the request arrived. */
  at: number;
}

export type Reply = (request: ReceivedRequest, index: number) => Response | Promise<Response>;

export interface Receiver {
  url: string;
  received: ReceivedRequest[];
  /** Changes the answer of the next requests. */
  reply(next: Reply): void;
  /** An answer that comes only after `ms`, or at once (503) when the receiver closes. */
  slowly(ms: number, response?: () => Response): Reply;
  /** Resolves once `count` requests arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export function startReceiver(first: Reply = () => new Response("ok")): Receiver {
  const received: ReceivedRequest[] = [];
  let answer = first;
  const aborts = new AbortController();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const record: ReceivedRequest = {
      method: request.method,
      path: new URL(request.url).pathname,
      headers: Object.fromEntries(request.headers),
      body: await request.text(),
      at: performance.now(),
    };
    const index = received.push(record) - 1;
    return await answer(record, index);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    received,
    reply(next) {
      answer = next;
    },
    slowly(ms, response = () => new Response("late")) {
      return () =>
        new Promise<Response>((resolve) => {
          const timer = setTimeout(() => resolve(response()), ms);
          aborts.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve(new Response("closing", { status: 503 }));
          }, { once: true });
        });
    },
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = performance.now() + timeoutMs;
      while (received.length < count) {
        if (performance.now() > deadline) {
          throw new Error(`Receiver got ${received.length} of ${count} requests within ${timeoutMs} ms`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return received.slice(0, count);
    },
    async close() {
      aborts.abort();
      await server.shutdown();
    },
  };
}
