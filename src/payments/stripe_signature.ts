// The Stripe-style `Stripe-Signature` check of `POST /payments/webhook` (CONTRACT section 4):
// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">` under the payment webhook secret.

import { hmacSha256, timingSafeEqual } from "../hmac.ts";

/** Longer headers are refused before any work; Stripe sends two or three entries. */
const MAX_HEADER_LENGTH = 4096;
const PREFIX = "Invalid Stripe-Signature";

/**
 * Null when `header` signs `body` under `secret` within `toleranceSeconds` of `now` (either side),
 * else the 400 phrase. Any matching `v1` entry is accepted (the provider sends several while a
 * secret rolls over); other schemes such as `v0` are ignored.
 */
export async function verifyStripeSignature(
  header: string | null,
  body: string,
  { secret, now, toleranceSeconds = 300 }: { secret: string; now: Date; toleranceSeconds?: number },
): Promise<string | null> {
  // An empty secret would accept signatures anyone can make: a wiring fault, not a bad request.
  if (secret === "") throw new Error("verifyStripeSignature needs a non-empty secret");
  if (header === null || header.trim() === "") return `${PREFIX}: missing`;
  const parsed = parseHeader(header);
  if (parsed === null) return `${PREFIX}: malformed`;

  // As Stripe's libraries do, the signature is checked first and the timestamp after, so a
  // forger learns nothing about the clock.
  const expected = await hmacHex(secret, `${parsed.timestamp}.${body}`);
  if (!parsed.signatures.some((signature) => timingSafeEqual(signature, expected))) {
    return `${PREFIX}: no matching v1 signature`;
  }
  const age = Math.floor(now.getTime() / 1000) - parsed.timestamp;
  // A timestamp from the future is refused too, so a captured request cannot be held back to
  // replay later.
  if (Math.abs(age) > toleranceSeconds) return `${PREFIX}: timestamp outside the tolerance`;
  return null;
}

/** A valid header for `body` signed at `at`, as the payment provider would send it. */
export async function signStripePayload(body: string, secret: string, at: Date): Promise<string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return `t=${timestamp},v1=${await hmacHex(secret, `${timestamp}.${body}`)}`;
}

interface SignatureHeader {
  timestamp: number;
  /** The `v1` values, possibly none. */
  signatures: string[];
}

/** Comma-separated `key=value` pairs with exactly one `t`; null when the header is not that. */
function parseHeader(header: string): SignatureHeader | null {
  if (header.length > MAX_HEADER_LENGTH) return null;
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const pair of header.split(",")) {
    const separator = pair.indexOf("=");
    if (separator <= 0) return null;
    const key = pair.slice(0, separator).trim();
    const value = pair.slice(separator + 1).trim();
    if (key === "t") {
      // Up to 12 digits: any real Unix time in seconds, never a number that loses precision.
      if (timestamp !== null || !/^[0-9]{1,12}$/.test(value)) return null;
      timestamp = Number(value);
    } else if (key === "v1") {
      signatures.push(value);
    }
  }
  return timestamp === null ? null : { timestamp, signatures };
}

async function hmacHex(secret: string, payload: string): Promise<string> {
  const mac = await hmacSha256(secret, payload);
  return Array.from(mac, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
