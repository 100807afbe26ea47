// A wallet's data key at work: AES-256-GCM of an event's sensitive fields, synchronous through
// node:crypto. Web Crypto's encrypt is a promise settled from a worker thread, measured at 23 to
// 36 µs of CPU per message against 9 here, and a billed POST /kv seals two messages. The bytes are
// the same as aes_gcm.ts's: base64 of a random 96-bit IV, the ciphertext and the 128-bit tag, so
// either opens what the other sealed (tests/field_cipher_unit_test.ts).
import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, randomFillSync } from "node:crypto";

const IV_BYTES = 12;
const TAG_BYTES = 16;
const ALGORITHM = "aes-256-gcm";

export class FieldCipher {
  readonly #key: Buffer;

  constructor(raw: Uint8Array) {
    if (raw.byteLength !== 32) throw new RangeError(`An AES-256 key is 32 bytes, not ${raw.byteLength}`);
    this.#key = Buffer.from(raw);
  }

  /** `text` sealed under this key, bound to `context` (it opens only with the same context). */
  seal(text: string, context: string): string {
    const iv = randomFillSync(Buffer.alloc(IV_BYTES));
    const cipher = createCipheriv(ALGORITHM, this.#key, iv);
    cipher.setAAD(Buffer.from(context, "utf8"));
    const body = cipher.update(text, "utf8");
    const last = cipher.final();
    return Buffer.concat([iv, body, last, cipher.getAuthTag()]).toString("base64");
  }

  /** The text `seal` sealed with this key and context; throws when the key, context or bytes differ. */
  open(sealed: string, context: string): string {
    const bytes = Buffer.from(sealed, "base64");
    if (bytes.byteLength < IV_BYTES + TAG_BYTES) throw new Error("A sealed message is too short");
    const decipher = createDecipheriv(ALGORITHM, this.#key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, "utf8"));
    decipher.setAuthTag(bytes.subarray(bytes.byteLength - TAG_BYTES));
    const body = decipher.update(bytes.subarray(IV_BYTES, bytes.byteLength - TAG_BYTES), undefined, "utf8");
    return body + decipher.final("utf8");
  }
}
