// Random identifiers and tokens from the cryptographic random source.
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

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
