// AES-256-GCM through Web Crypto: a random 96-bit IV per message, stored in front of the
// ciphertext, and additional data that binds a ciphertext to where it belongs (a wallet, an event).
import { fromBase64, toBase64 } from "./base64.ts";

const IV_BYTES = 12;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A CryptoKey for AES-256-GCM from 32 raw bytes; not extractable once imported. */
export function importAesKey(raw: Uint8Array): Promise<CryptoKey> {
  if (raw.byteLength !== 32) throw new RangeError(`An AES-256 key is 32 bytes, not ${raw.byteLength}`);
  return crypto.subtle.importKey("raw", raw as BufferSource, "AES-GCM", false, ["encrypt", "decrypt"]);
}

/** Encrypts bytes under `key`; the result is base64 of IV and ciphertext. */
export async function sealBytes(key: CryptoKey, plain: Uint8Array, context: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
    key,
    plain as BufferSource,
  );
  const out = new Uint8Array(IV_BYTES + sealed.byteLength);
  out.set(iv);
  out.set(new Uint8Array(sealed), IV_BYTES);
  return toBase64(out);
}

/** The bytes sealed by sealBytes with the same key and context; throws when either differs. */
export async function openBytes(key: CryptoKey, sealed: string, context: string): Promise<Uint8Array> {
  const bytes = fromBase64(sealed);
  const plain = await crypto.subtle.decrypt(
    {
      name: "AES-GCM",
      iv: bytes.subarray(0, IV_BYTES) as BufferSource,
      additionalData: encoder.encode(context),
    },
    key,
    bytes.subarray(IV_BYTES) as BufferSource,
  );
  return new Uint8Array(plain);
}

export function sealText(key: CryptoKey, text: string, context: string): Promise<string> {
  return sealBytes(key, encoder.encode(text), context);
}

export async function openText(key: CryptoKey, sealed: string, context: string): Promise<string> {
  return decoder.decode(await openBytes(key, sealed, context));
}
