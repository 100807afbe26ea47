// The one way the service calls a webhook URL (CONTRACT sections 6 and 8): a JSON POST that connects
// only to addresses vetted as public, never follows redirects, and is bounded in time and bytes read.

import http from "node:http";
import https from "node:https";
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { isPublicAddress, stripBrackets, TARGET_NOT_ALLOWED } from "./url_safety.ts";
import { HEADER_NAME, HEADER_VALUE, TRANSPORT_HEADERS } from "./headers.ts";
import { describeError } from "../log.ts";
import { storableText } from "../storable_text.ts";

/**
 * `excerpt`: the start of the receiver's answer (at most MAX_EXCERPT_BYTES, as text), when it
 * answered with a body.
 */
export type PostResult =
  | { ok: true; status: number; latencyMs: number; excerpt?: string }
  | { ok: false; status?: number; latencyMs: number; error: string; retryable: boolean; excerpt?: string };

/** Resolves a host name to IP addresses (strings). */
export type Resolver = (hostname: string) => Promise<string[]>;

export interface PostJsonOptions {
  headers: Record<string, string>;
  /** Whole request, DNS included; default 10000. */
  timeoutMs?: number;
  /** UNSAFE_ALLOW_PRIVATE_WEBHOOKS: allow `http:` and private or loopback destinations. */
  allowPrivate?: boolean;
  /** Name resolution; default the system resolver (node:dns lookup). Tests inject their own. */
  resolve?: Resolver;
  /** PEM CA certificates that replace the default trust store; for tests with a local TLS server. */
  ca?: string;
}

export interface VetAddressesOptions {
  resolve?: Resolver;
  allowPrivate?: boolean;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
/** Response bytes read before the connection is dropped; all but the excerpt are discarded. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** Bytes of the answer kept as its excerpt (issue 13: at most 1 KiB of text). */
export const MAX_EXCERPT_BYTES = 1024;
const MAX_ERROR_DETAIL = 200;

type Outcome =
  | { ok: true; status: number; excerpt?: string }
  | { ok: false; status?: number; error: string; retryable: boolean; excerpt?: string };

/**
 * The addresses a connection to `host` may use: an IP literal is judged itself, a name is resolved
 * once and every non-public address dropped (unless allowPrivate). Empty means blocked; a failed or
 * empty lookup throws.
 */
export async function vetAddresses(host: string, options: VetAddressesOptions = {}): Promise<string[]> {
  const bare = stripBrackets(host);
  const candidates = isIP(bare) !== 0 ? [bare] : await (options.resolve ?? systemResolve)(bare);
  // An empty answer is a failed lookup (retry later), not a blocked destination.
  if (candidates.length === 0) throw new Error(`Cannot resolve "${bare}": no addresses`);
  return candidates.filter((ip) => options.allowPrivate ? isIP(ip) !== 0 : isPublicAddress(ip));
}

/** POSTs the exact `body` bytes as JSON and classifies the answer; never throws. */
export async function postJson(url: string, body: string, options: PostJsonOptions): Promise<PostResult> {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  try {
    const outcome = await attempt(url, body, options, deadline.signal, timeoutMs);
    return { ...outcome, latencyMs: Math.round(performance.now() - started) };
  } finally {
    clearTimeout(timer);
  }
}

async function attempt(
  url: string,
  body: string,
  options: PostJsonOptions,
  deadline: AbortSignal,
  timeoutMs: number,
): Promise<Outcome> {
  const allowPrivate = options.allowPrivate === true;
  const target = parseTarget(url, allowPrivate);
  if (typeof target === "string") return { ok: false, error: target, retryable: false };
  const headers = buildHeaders(options.headers, target);
  if (typeof headers === "string") return { ok: false, error: headers, retryable: false };

  const host = stripBrackets(target.hostname);
  // A name that does not resolve and a name that resolves only to non-public addresses fail alike,
  // in text and in retrying: otherwise a webhook's error would tell its owner which names exist
  // inside our network. Both are retried, since DNS answers change. A literal IP reveals nothing
  // and cannot change, so it is not retried.
  const notAllowed: Outcome = { ok: false, error: TARGET_NOT_ALLOWED, retryable: isIP(host) === 0 };
  let addresses: string[] | "timeout";
  try {
    addresses = await untilAborted(vetAddresses(host, { resolve: options.resolve, allowPrivate }), deadline);
  } catch {
    return notAllowed;
  }
  if (addresses === "timeout") return { ok: false, error: `timeout after ${timeoutMs} ms`, retryable: true };
  if (addresses.length === 0) return notAllowed;
  return await send(target, new TextEncoder().encode(body), headers, {
    addresses,
    ca: options.ca,
    deadline,
    timeoutMs,
  });
}

function parseTarget(url: string, allowPrivate: boolean): URL | string {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return "invalid url";
  }
  const schemeAllowed = target.protocol === "https:" || (allowPrivate && target.protocol === "http:");
  if (!schemeAllowed) return `scheme ${target.protocol} not allowed`;
  // Credentials in the URL would be sent as Basic auth by node:http; configuration refuses them.
  if (target.username !== "" || target.password !== "") return "credentials in url not allowed";
  return target;
}

function buildHeaders(given: Record<string, string>, target: URL): Record<string, string> | string {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    // Only the name is quoted: values may be secrets.
    if (!HEADER_NAME.test(name)) return `invalid header name "${clean(name, 64)}"`;
    if (typeof value !== "string" || !HEADER_VALUE.test(value)) return `invalid value of header "${name}"`;
    if (!TRANSPORT_HEADERS.has(name.toLowerCase())) headers[name] = value;
  }
  headers["Host"] = target.host;
  headers["Content-Type"] = "application/json";
  return headers;
}

interface SendOptions {
  addresses: string[];
  ca?: string;
  deadline: AbortSignal;
  timeoutMs: number;
}

// The socket connects through `lookup`, which answers only the vetted addresses and never asks DNS
// again, so a rebinding between the check and the connect cannot change the destination. TLS still
// verifies (and sends SNI for) the URL's host name, since `host` stays the name.
function send(target: URL, body: Uint8Array, headers: Record<string, string>, options: SendOptions) {
  return new Promise<Outcome>((settle) => {
    const secure = target.protocol === "https:";
    const host = stripBrackets(target.hostname);
    let outcome: Outcome | undefined;
    let request: http.ClientRequest | undefined;
    const finish = (result: Outcome) => {
      if (outcome !== undefined) return;
      outcome = result;
      options.deadline.removeEventListener("abort", onDeadline);
      request?.destroy();
      settle(result);
    };
    let answered: Outcome | undefined;
    const onDeadline = () => {
      finish(answered ?? { ok: false, error: `timeout after ${options.timeoutMs} ms`, retryable: true });
    };
    options.deadline.addEventListener("abort", onDeadline);

    try {
      request = (secure ? https : http).request({
        method: "POST",
        host,
        port: Number(target.port) || (secure ? 443 : 80),
        path: target.pathname + target.search,
        headers: { ...headers, "Content-Length": String(body.byteLength) },
        agent: false,
        lookup: vettedLookup(host, options.addresses),
        ...(secure && options.ca !== undefined ? { ca: options.ca } : {}),
      });
    } catch (error) {
      finish({ ok: false, error: `invalid request: ${describe(error)}`, retryable: false });
      return;
    }
    request.on("error", (error) => finish(networkFailure(error)));
    request.on("response", (response) => {
      answered = classify(response.statusCode ?? 0, response.headers.location);
      // Drain a bounded amount so the receiver is not cut off mid-write, then drop the rest; the
      // first bytes are kept as the excerpt.
      const excerpt = new Uint8Array(MAX_EXCERPT_BYTES);
      let read = 0;
      const answer = () => ({
        ...answered!,
        ...excerptOf(excerpt.subarray(0, Math.min(read, excerpt.length))),
      });
      response.on("data", (chunk: Uint8Array) => {
        if (read < excerpt.length) excerpt.set(chunk.subarray(0, excerpt.length - read), read);
        read += chunk.byteLength;
        if (read >= MAX_RESPONSE_BYTES) finish(answer());
      });
      response.on("end", () => finish(answer()));
      response.on("error", () => finish(answer()));
      response.on("close", () => finish(answer()));
    });
    if (options.deadline.aborted) onDeadline();
    else request.end(body);
  });
}

/**
 * The excerpt of an answer's first bytes: UTF-8 text, a character cut by the byte limit dropped
 * (invalid bytes read as U+FFFD). None for an empty body.
 */
export function excerptOf(bytes: Uint8Array): { excerpt?: string } {
  if (bytes.length === 0) return {};
  let text = new TextDecoder().decode(bytes, { stream: true });
  if (text.length === 0) text = new TextDecoder().decode(bytes);
  // A receiver's answer is kept in the outbox row and the history: never a string Postgres refuses.
  return { excerpt: storableText(text) };
}

type LookupCallback = (
  error: Error | null,
  address: string | { address: string; family: number }[],
  family?: number,
) => void;

function vettedLookup(host: string, addresses: string[]) {
  return (hostname: string, options: unknown, callback?: LookupCallback) => {
    const done = (typeof options === "function" ? options : callback) as LookupCallback;
    if (hostname.toLowerCase() !== host.toLowerCase()) {
      done(new Error(`unexpected lookup of ${hostname}`), "");
      return;
    }
    if (typeof options === "object" && options !== null && (options as { all?: boolean }).all) {
      done(null, addresses.map((address) => ({ address, family: isIP(address) })));
    } else {
      done(null, addresses[0], isIP(addresses[0]));
    }
  };
}

function classify(status: number, location: string | undefined): Outcome {
  if (status >= 200 && status < 300) return { ok: true, status };
  if (status >= 300 && status < 400) {
    const error = location === undefined
      ? `redirect (${status}) without Location not followed`
      : `redirect to ${clean(location, MAX_ERROR_DETAIL)} not followed`;
    return { ok: false, status, error, retryable: false };
  }
  const reason = http.STATUS_CODES[status];
  const retryable = status === 408 || status === 429 || status >= 500;
  return { ok: false, status, error: reason ? `HTTP ${status} ${reason}` : `HTTP ${status}`, retryable };
}

const NETWORK_ERRORS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection closed",
  ENETUNREACH: "network unreachable",
  EHOSTUNREACH: "host unreachable",
  ETIMEDOUT: "connection timed out",
};

// Certificate problems are often fixed on the receiver's side (renewal), so they stay retryable.
function networkFailure(error: unknown): Outcome {
  const code = String((error as { code?: unknown })?.code ?? "");
  const known = NETWORK_ERRORS[code];
  if (known !== undefined) return { ok: false, error: known, retryable: true };
  const kind = /CERT|TLS|SSL/.test(code) ? "TLS error" : "network error";
  return { ok: false, error: `${kind}: ${describe(error)}`, retryable: true };
}

// Resolves to "timeout" once the deadline passes, so a hanging resolver cannot outlive the request.
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | "timeout"> {
  if (signal.aborted) return Promise.resolve("timeout");
  return new Promise<T | "timeout">((settle, fail) => {
    const onAbort = () => settle("timeout");
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(settle, fail).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

async function systemResolve(hostname: string): Promise<string[]> {
  const answers = await dnsLookup(hostname, { all: true });
  return answers.map((answer) => answer.address);
}

function describe(error: unknown): string {
  return clean(describeError(error), MAX_ERROR_DETAIL);
}

// Error texts end up in logs and API answers: one line, bounded length.
function clean(text: string, max: number): string {
  // deno-lint-ignore no-control-regex
  const line = text.replace(/[\x00-\x1f\x7f]+/g, " ");
  return line.length > max ? `${line.slice(0, max)}...` : line;
}
