// Hands a node:http request to a fetch-style handler (the Hono app) as a web Request and writes
// its web Response back. The body reaches the app as a stream pulled on demand, capped, so a body
// nobody reads is never buffered, and an answer sent before the body ended closes the connection.
import type { IncomingMessage, ServerResponse } from "node:http";
import { tooLarge } from "./body.ts";
import { clientAddress } from "../net/connection_gate.ts";

export interface RemoteAddr {
  hostname: string;
  port: number;
  transport: "tcp";
}

export type FetchHandler = (
  request: Request,
  env: { remoteAddr: RemoteAddr },
) => Response | Promise<Response>;

export interface AdapterOptions {
  /** Past this many bytes the body stream fails with 413, whoever reads it. */
  maxBodyBytes: number;
  /** True while the server shuts down: answers close their connection. */
  closing(): boolean;
  onError(error: unknown): void;
}

export function nodeListener(fetch: FetchHandler, options: AdapterOptions) {
  return (req: IncomingMessage, res: ServerResponse) => {
    serveOne(fetch, options, req, res).catch((error) => {
      options.onError(error);
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { "content-type": "text/plain; charset=utf-8", connection: "close" });
        res.end("Internal Server Error");
      } else {
        res.destroy();
      }
    });
  };
}

async function serveOne(
  fetch: FetchHandler,
  options: AdapterOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const request = toRequest(req, options.maxBodyBytes);
  const remoteAddr: RemoteAddr = {
    hostname: clientAddress(req.socket.remoteAddress),
    port: req.socket.remotePort ?? 0,
    transport: "tcp",
  };
  const response = await fetch(request, { remoteAddr });
  const body = response.body ? new Uint8Array(await response.arrayBuffer()) : undefined;
  if (res.destroyed) return;
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers["set-cookie"] = cookies;
  if (body && headers["content-length"] === undefined) headers["content-length"] = String(body.byteLength);
  // The rest of an unfinished body is never read, not even to drain it for the next request.
  if (!req.complete || options.closing()) headers.connection = "close";
  res.writeHead(response.status, headers);
  res.end(body);
}

const BODYLESS = new Set(["GET", "HEAD"]);

function toRequest(req: IncomingMessage, maxBodyBytes: number): Request {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  const method = req.method ?? "GET";
  const length = req.headers["content-length"];
  const hasBody = !BODYLESS.has(method) &&
    (req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0"));
  return new Request(urlOf(req), {
    method,
    headers,
    // Deno takes a streamed request body without the `duplex` option browsers ask for.
    body: hasBody ? bodyStream(req, maxBodyBytes) : null,
  });
}

function urlOf(req: IncomingMessage): URL {
  const target = req.url ?? "/";
  try {
    return new URL(target, `http://${req.headers.host ?? "localhost"}`);
  } catch {
    // A Host header that is no host name: the path is what the app routes on.
    return new URL(target.startsWith("/") ? target : "/", "http://localhost");
  }
}

/** The body as a web stream that pulls from the socket only when read, and fails past the cap. */
function bodyStream(req: IncomingMessage, maxBytes: number): ReadableStream<Uint8Array> {
  let received = 0;
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        req.pause();
        controller.error(error);
      };
      req.on("data", (chunk: Uint8Array) => {
        if (settled) return;
        received += chunk.byteLength;
        if (received > maxBytes) return fail(tooLarge(maxBytes));
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      });
      req.on("end", () => {
        if (settled) return;
        settled = true;
        controller.close();
      });
      req.on("error", fail);
      // A client that goes away mid-body: the stream fails rather than waiting forever.
      req.on("close", () => fail(new Error("The connection closed before the body ended")));
    },
    pull() {
      if (!settled) req.resume();
    },
    cancel() {
      settled = true;
      req.pause();
    },
  });
}
