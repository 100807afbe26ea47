// Hands a node:http request to a fetch-style handler (the Hono app) as a web Request
// (node_request.ts) and writes its web Response back. An answer sent before the request's body
// ended closes the connection: the rest is never read, not even to drain it.
import type { IncomingMessage, ServerResponse } from "node:http";
import { nodeRequest } from "./node_request.ts";
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
  // A client that waits for "100 Continue" gets it only once a route reads the body: a body
  // refused from its declared length is then never sent at all.
  const expectsContinue = /100-continue/i.test(req.headers.expect ?? "");
  const request = nodeRequest(
    req,
    options.maxBodyBytes,
    expectsContinue ? () => res.writeContinue() : undefined,
  );
  const remoteAddr: RemoteAddr = {
    hostname: clientAddress(req.socket.remoteAddress),
    port: req.socket.remotePort ?? 0,
    transport: "tcp",
  };
  const response = await fetch(request, { remoteAddr });
  // Read whole without touching response.body, which would make a stream of a body held whole.
  const body = new Uint8Array(await response.arrayBuffer());
  if (res.destroyed) return;
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers["set-cookie"] = cookies;
  if (headers["content-length"] === undefined && req.method !== "HEAD" && mayHaveBody(response.status)) {
    headers["content-length"] = String(body.byteLength);
  }
  // The rest of an unfinished body is never read, not even to drain it for the next request.
  if (!req.complete || options.closing()) headers.connection = "close";
  res.writeHead(response.status, headers);
  res.end(body.byteLength > 0 ? body : undefined);
}

/** Whether an answer of this status may carry a body (RFC 9110 section 6.4.1): not 1xx, 204 nor 304. */
function mayHaveBody(status: number): boolean {
  return status >= 200 && status !== 204 && status !== 304;
}
