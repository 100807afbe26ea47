// The web Request the app sees for a node:http request. Building a real Request costs more than
// the rest of a cached call, so this one builds only what is read: the URL, method and headers at
// once, the body stream when a route reads it, a real Request only for the body parsers.
import type { IncomingMessage } from "node:http";
import { tooLarge } from "./body.ts";

const BODYLESS = new Set(["GET", "HEAD"]);

/** Everything Hono and the routes read of a Request; the rest is never touched. */
class NodeRequest {
  readonly url: string;
  readonly method: string;
  #headers?: Headers;
  #body?: ReadableStream<Uint8Array> | null;
  #real?: Request;

  constructor(
    private readonly req: IncomingMessage,
    private readonly maxBodyBytes: number,
    private readonly beforeBodyRead?: () => void,
  ) {
    this.url = urlOf(req);
    this.method = req.method ?? "GET";
  }

  get headers(): Headers {
    if (!this.#headers) {
      const headers = new Headers();
      const raw = this.req.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
      this.#headers = headers;
    }
    return this.#headers;
  }

  /** Pulled from the socket only when read, so a body nobody reads is never buffered. */
  get body(): ReadableStream<Uint8Array> | null {
    if (this.#body === undefined) {
      const length = this.req.headers["content-length"];
      const hasBody = !BODYLESS.has(this.method) &&
        (this.req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0"));
      if (hasBody) this.beforeBodyRead?.();
      this.#body = hasBody ? bodyStream(this.req, this.maxBodyBytes) : null;
    }
    return this.#body;
  }

  get bodyUsed(): boolean {
    return this.#real?.bodyUsed ?? this.#body?.locked ?? false;
  }

  text = () => this.#request().text();
  json = () => this.#request().json();
  arrayBuffer = () => this.#request().arrayBuffer();
  bytes = () => this.#request().bytes();
  blob = () => this.#request().blob();
  formData = () => this.#request().formData();

  #request(): Request {
    // Deno takes a streamed request body without the `duplex` option browsers ask for.
    this.#real ??= new Request(this.url, { method: this.method, headers: this.headers, body: this.body });
    return this.#real;
  }
}

/** `beforeBodyRead` runs once, when a route first reads the body (to send 100 Continue). */
export function nodeRequest(
  req: IncomingMessage,
  maxBodyBytes: number,
  beforeBodyRead?: () => void,
): Request {
  return new NodeRequest(req, maxBodyBytes, beforeBodyRead) as unknown as Request;
}

/** A path segment that URL parsing would take as a step: `.` or `..`, escaped or not. */
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;

function urlOf(req: IncomingMessage): string {
  const target = req.url ?? "/";
  let url: URL;
  try {
    url = new URL(target, `http://${req.headers.host ?? "localhost"}`);
  } catch {
    // A Host header that is no host name: the path is what the app routes on.
    url = new URL(target.startsWith("/") ? target : "/", "http://localhost");
  }
  // `/kv/%2E/k` would become `/kv/k`, another resource: the path is kept as sent, so the route sees
  // the name `.` and refuses it as MCP does (kv/schemas.ts), instead of answering for another one.
  const path = target.split(/[?#]/, 1)[0];
  return target.startsWith("/") && DOT_SEGMENT.test(path) ? url.origin + target : url.href;
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
