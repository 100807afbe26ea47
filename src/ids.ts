// Random identifiers and tokens from the cryptographic random source, and the token hash.
import { createHash } from "node:crypto";
const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const MIXED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

function randomString(length: number, alphabet: string): string {
  // Rejection sampling keeps every character equally likely.
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length];
    }
  }
  return out;
}

/** A wallet token: 32 lowercase letters and digits. */
export function newToken(): string {
  return randomString(32, ALPHABET);
}

/** An opaque identifier (call log ids, message ids). */
export function randomId(length = 20): string {
  return randomString(length, MIXED);
}

/** A lowercase identifier, for things people type or read, such as mailbox names. */
export function randomLowerId(length: number): string {
  return randomString(length, ALPHABET);
}

/** Lowercase hex SHA-256; synchronous, as it runs on every authenticated request. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
