// Standard Webhooks v1 signing (CONTRACT section 8): per-webhook `whsec_` secrets and the
// `webhook-id`, `webhook-timestamp`, `webhook-signature` headers receivers verify.

import { hmacSha256 } from "../hmac.ts";

const SECRET_PREFIX = "whsec_";
const SECRET_BYTES = 32;

export interface SignatureHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/** A fresh secret: `whsec_` + base64 of 32 random bytes, shown to the user once on create. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + encodeBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

/**
 * Headers signing `body` for one delivery attempt. `timestamp` is the attempt's time (it changes on
 * retries), `messageId` stays the same across retries so receivers can deduplicate. Send exactly the
 * `body` string that was signed.
 */
export async function signatureHeaders(
  secret: string,
  { messageId, timestamp, body }: { messageId: string; timestamp: Date; body: string },
): Promise<SignatureHeaders> {
  // The signed content joins the parts with "."; a "." inside the id would make it ambiguous.
  if (messageId === "" || messageId.includes(".")) {
    throw new Error(`Invalid webhook message id "${messageId}": must be non-empty without "."`);
  }
  const seconds = Math.floor(timestamp.getTime() / 1000);
  if (!Number.isFinite(seconds)) throw new Error("Invalid webhook timestamp: not a valid date");
  const mac = await hmacSha256(decodeSecret(secret), `${messageId}.${seconds}.${body}`);
  return {
    "webhook-id": messageId,
    "webhook-timestamp": String(seconds),
    "webhook-signature": `v1,${encodeBase64(mac)}`,
  };
}

// The HMAC key is the decoded bytes after the prefix; like the reference libraries, a bare base64
// secret without the prefix is accepted too.
function decodeSecret(secret: string): Uint8Array {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  let binary: string;
  try {
    binary = atob(encoded);
  } catch {
    binary = "";
  }
  if (binary === "") throw new Error('Invalid webhook secret: must be "whsec_" followed by base64');
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

function encodeBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}
