// The HTTP server. Deno.serve (Deno 2.9.6) has no header, body or keep-alive timeout and no bound
// on connections, so the service runs on Deno's node:http, which has the timeouts, with a gate
// that bounds connections in total and per client address.
import { createServer } from "node:http";
import type { Socket } from "node:net";
import { type FetchHandler, nodeListener } from "./node_adapter.ts";
import { MAX_REQUEST_BODY_BYTES } from "./body.ts";
import { clientAddress, connectionGate } from "../net/connection_gate.ts";
import type { HttpLimits } from "../config.ts";

export type { HttpLimits };
import { logError } from "../log.ts";
import { requestIdHeaders, requestIdsOf } from "./request_id.ts";
import { InFlight, onClientError } from "./client_errors.ts";
import { recordRefusedConnection, watchOpenConnections } from "../metrics/http_metrics.ts";

export interface HttpServer {
  port: number;
  /**
   * Answers `/readyz` 503 for `ms` while every other request is still served, so a load balancer's
   * health check takes the instance out before it stops accepting; a second call ends it early.
   */
  drain(ms: number): Promise<void>;
  /** Stops accepting, lets the requests in flight finish, then closes every connection. */
  shutdown(): Promise<void>;
}

/** How often node:http looks for requests past their timeouts: a fraction of the shortest one. */
function checkingIntervalMs(limits: HttpLimits): number {
  return Math.max(
    50,
    Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
  );
}

const TOO_MANY = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n" +
  "retry-after: 1\r\nconnection: close\r\ncontent-length: ";
/** How long shutdown waits for answers in flight before it closes what is left. */
const SHUTDOWN_GRACE_MS = 10_000;
const SHUTDOWN_POLL_MS = 50;

/** The drain's state: on from its start to the end of the service; `run` again cuts the wait. */
function drainGate() {
  let cut: (() => void) | undefined;
  const state = {
    active: false,
    run(ms: number): Promise<void> {
      if (state.active) {
        cut?.();
        return Promise.resolve();
      }
      state.active = true;
      return new Promise<void>((done) => {
        const timer = setTimeout(done, ms);
        cut = () => (clearTimeout(timer), done());
      });
    },
  };
  return state;
}

function isReadiness(request: Request): boolean {
  return request.method === "GET" || request.method === "HEAD"
    ? new URL(request.url).pathname === "/readyz"
    : false;
}

/** /readyz while draining: not ready, so the balancer sends nothing new here. */
function shuttingDown(request: Request): Response {
  return new Response("Shutting down", {
    status: 503,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "retry-after": "1",
      ...requestIdHeaders(requestIdsOf(request.headers.get("x-request-id"))),
    },
  });
}

export function startHttpServer(
  fetch: FetchHandler,
  options: { port: number; hostname: string; limits: HttpLimits },
): Promise<HttpServer> {
  const { limits } = options;
  let closing = false;
  const draining = drainGate();
  const gate = connectionGate(limits);
  const sockets = new Set<Socket>();
  const served: FetchHandler = (request, env) =>
    draining.active && isReadiness(request) ? shuttingDown(request) : fetch(request, env);
  const inFlight = new InFlight();
  const answer = nodeListener(served, {
    maxBodyBytes: MAX_REQUEST_BODY_BYTES,
    // While draining, answers close their connection too: a client reconnects, through the
    // balancer to another instance.
    closing: () => closing || draining.active,
    onError: (error) => logError("http request failed", error),
  });
  const listener: typeof answer = (req, res) => {
    inFlight.track(req, res);
    answer(req, res);
  };
  const server = createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    connectionsCheckingInterval: checkingIntervalMs(limits),
  }, listener);
  // Without this node:http answers "100 Continue" before the app has seen the request.
  server.on("checkContinue", listener);

  // Before node:http reads a byte: a client over its share is answered 503 and closed.
  server.on("connection", (socket: Socket) => {
    const ip = clientAddress(socket.remoteAddress);
    const admission = gate.admit(ip);
    if (admission !== "admitted") {
      recordRefusedConnection(admission === "too many" ? "total" : "per_address");
      const phrase = admission === "too many"
        ? "Too many connections"
        : "Too many connections from this address";
      socket.end(`${TOO_MANY}${phrase.length}\r\n\r\n${phrase}`);
      return;
    }
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      gate.release(ip);
    });
  });
  // Broken requests and timeouts get node:http's answers (400, 408, 431) and a close, with the
  // request ids every answer carries (client_errors.ts).
  server.on("clientError", onClientError(inFlight));
  watchOpenConnections(() => sockets.size);

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      server.on("error", (error) => logError("http server error", error));
      const address = server.address();
      resolve({
        port: typeof address === "object" && address ? address.port : options.port,
        drain: (ms) => draining.run(ms),
        async shutdown() {
          closing = true;
          const closed = new Promise<void>((done) => server.close(() => done()));
          // Idle keep-alive connections go now; busy ones once their answer is written.
          const deadline = performance.now() + SHUTDOWN_GRACE_MS;
          while (sockets.size > 0 && performance.now() < deadline) {
            server.closeIdleConnections();
            await new Promise((r) => setTimeout(r, SHUTDOWN_POLL_MS));
          }
          server.closeAllConnections();
          await closed;
        },
      });
    });
  });
}
