// Request bodies read within a limit, and text decoded strictly (CONTRACT section 1): a declared
// length over the limit is refused before reading, a stream past it is cut off while reading, and
// bytes that are not UTF-8 are bad input rather than silently replaced, as is text that Postgres
// cannot store (a U+0000 byte is valid UTF-8).
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { CLOSE_CONNECTION, InputRefused } from "./input_refused.ts";
import { isStorable, UNSTORABLE_RULE } from "../storable_text.ts";
import { concat } from "../bytes.ts";

/** No route takes more: the server refuses a larger body before any route runs. */
export const MAX_REQUEST_BODY_BYTES = 256 * 1024;

export function tooLarge(limitBytes: number): InputRefused {
  return new InputRefused(413, `Payload Too Large: the body must be at most ${limitBytes} bytes`, false);
}

const INCOMPLETE = () => new InputRefused(408, "Request Timeout: the body did not arrive in full", false);
const notUtf8 = (field: string) => new InputRefused(400, `Invalid ${field}: must be valid UTF-8`, true);
const unstorable = (field: string) => new InputRefused(400, `Invalid ${field}: ${UNSTORABLE_RULE}`, true);

/** The declared Content-Length, or null when the body is streamed without one. */
function declaredLength(c: Context<AppEnv>): number | null {
  const header = c.req.header("content-length");
  if (header === undefined) return null;
  const length = Number(header);
  return Number.isSafeInteger(length) && length >= 0 ? length : Infinity;
}

/** Bytes already read by an earlier call, kept beside Hono's own body cache. */
const bytesRead = new WeakMap<Request, Uint8Array>();

/** The whole body as bytes, at most `limitBytes` of them; the stream is cancelled past the limit. */
export async function readBodyBytes(c: Context<AppEnv>, limitBytes: number): Promise<Uint8Array> {
  const known = bytesRead.get(c.req.raw);
  if (known) {
    if (known.byteLength > limitBytes) throw tooLarge(limitBytes);
    return known;
  }
  if ((declaredLength(c) ?? 0) > limitBytes) throw tooLarge(limitBytes);
  const stream = c.req.raw.body;
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (stream) {
    const reader = stream.getReader();
    while (true) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch (error) {
        // The server cut the stream at its own cap, or the client went away mid-body.
        throw error instanceof InputRefused ? error : INCOMPLETE();
      }
      if (step.done) break;
      size += step.value.byteLength;
      if (size > limitBytes) {
        reader.cancel().catch(() => {});
        throw tooLarge(limitBytes);
      }
      chunks.push(step.value);
    }
  }
  const bytes = concat(chunks, size);
  bytesRead.set(c.req.raw, bytes);
  // Later readers (the Idempotency-Key fingerprint, form parsing) see the same bytes.
  bodyCacheOf(c).arrayBuffer = Promise.resolve(bytes.buffer);
  return bytes;
}

/**
 * The body as text: at most `limitBytes` bytes of valid UTF-8 without U+0000 (decoded UTF-8 holds no
 * unpaired surrogate); `field` names it in the 400.
 */
export async function readTextBody(c: Context<AppEnv>, limitBytes: number, field = "body"): Promise<string> {
  const bytes = await readBodyBytes(c, limitBytes);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw notUtf8(field);
  }
  if (!isStorable(text)) throw unstorable(field);
  bodyCacheOf(c).text = Promise.resolve(text);
  return text;
}

/**
 * Refuses a declared body over MAX_REQUEST_BODY_BYTES before routing, authentication or reading:
 * on every path, including those that take no body and unknown ones. Never billed.
 */
export const refuseOversizedBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  if ((declaredLength(c) ?? 0) > MAX_REQUEST_BODY_BYTES) {
    return errorResponse(c, 413, tooLarge(MAX_REQUEST_BODY_BYTES).message, CLOSE_CONNECTION);
  }
  await next();
};

/** Hono keeps promises of the body there, whatever its type declaration says. */
function bodyCacheOf(c: Context<AppEnv>): Record<string, Promise<unknown>> {
  return c.req.bodyCache as unknown as Record<string, Promise<unknown>>;
}
