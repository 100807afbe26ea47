// Base64 of bytes and back, for wrapped keys and sealed fields kept in text and jsonb columns.
import { Buffer } from "node:buffer";

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

export function fromBase64(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "base64"));
}
