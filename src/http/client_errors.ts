// The answers node:http would write itself, on its own, for a request it gave up on: a request past
// its timeout (408), headers too large (431) or a request it cannot parse (400). Written here instead,
// they carry X-Request-Id and X-Service-Request-Id like every other answer (CONTRACT section 1), and
// a text/plain phrase; the client's own id is echoed when the request's headers had arrived.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { requestIdHeaders, requestIdsOf } from "./request_id.ts";
import { recordClientError } from "../metrics/http_metrics.ts";

/**
 * The request each connection is serving now, if its headers arrived: the client's id is in them.
 * A connection's entry is its last request's, in flight until its answer is finished; nothing is
 * listened for per request (each listener costs every call).
 */
export class InFlight {
  #serving = new WeakMap<Socket, { req: IncomingMessage; res: ServerResponse }>();

  /** Notes a request from its headers until its answer is finished. */
  track(req: IncomingMessage, res: ServerResponse): void {
    this.#serving.set(req.socket, { req, res });
  }

  of(socket: Socket): { req: IncomingMessage; res: ServerResponse } | undefined {
    const serving = this.#serving.get(socket);
    return serving && !serving.res.writableFinished && !serving.res.destroyed ? serving : undefined;
  }
}

const STATUS_OF: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request Timeout"],
  HPE_HEADER_OVERFLOW: [431, "Request Header Fields Too Large"],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, "Payload Too Large"],
};

/** The raw answer to a client error: its status line, the request ids, the phrase, and a close. */
export function clientErrorAnswer(code: string | undefined, sentRequestId: string | undefined): string {
  const [status, phrase] = STATUS_OF[code ?? ""] ?? [400, "Bad Request"];
  recordClientError(status);
  const headers = {
    "content-type": "text/plain; charset=utf-8",
    "content-length": String(phrase.length),
    ...requestIdHeaders(requestIdsOf(sentRequestId)),
    connection: "close",
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("");
  return `HTTP/1.1 ${status} ${phrase}\r\n${lines}\r\n${phrase}`;
}

/**
 * The server's `clientError` listener, as node:http's default one behaves: it answers only when no
 * byte of an answer was written yet on the connection, and then closes it.
 */
export function onClientError(inFlight: InFlight) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    if (error.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const serving = inFlight.of(socket);
    if (!serving?.res.headersSent) {
      const sent = serving?.req.headers["x-request-id"];
      socket.write(clientErrorAnswer(error.code, typeof sent === "string" ? sent : undefined));
    }
    socket.destroy();
  };
}
