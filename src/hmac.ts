// HMAC-SHA256 and a comparison whose time does not depend on where two strings differ: the
// primitives of every signature the service makes or checks (webhook deliveries, payment events,
// download links), in one place, as Hono keeps them in utils/buffer.ts.
import { createHmac } from "node:crypto";

const encoder = new TextEncoder();

/** The HMAC-SHA256 of `data` under `key` (a string is used as its UTF-8 bytes); rejects an empty key. */
export async function hmacSha256(key: string | Uint8Array, data: string): Promise<Uint8Array> {
  const keyBytes = typeof key === "string" ? encoder.encode(key) : key;
  const cryptoKey = await crypto.subtle.importKey(
    "raw",
    keyBytes as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(await crypto.subtle.sign("HMAC", cryptoKey, encoder.encode(data)));
}

/**
 * The same HMAC-SHA256, computed at once: for the pure decisions that sign (a download link in a
 * delivery's payload shown before it is sent), which cannot wait on Web Crypto's promise.
 */
export function hmacSha256Now(key: string | Uint8Array, data: string): Uint8Array {
  if (key.length === 0) throw new RangeError("Invalid HMAC key: must not be empty");
  return new Uint8Array(createHmac("sha256", key).update(data, "utf8").digest());
}

/** Time depends only on the lengths, never on where the strings first differ. */
export function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}
