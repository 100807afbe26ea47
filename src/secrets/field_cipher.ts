// A wallet's data key at work: AES-256-GCM of an event's sensitive fields, synchronous through
// node:crypto. Web Crypto's encrypt is a promise settled from a worker thread, measured at 23 to
// 36 µs of CPU per message against 9 here, and a billed POST /kv seals two messages. The bytes are
// the same as aes_gcm.ts's: base64 of a random 96-bit IV, the ciphertext and the 128-bit tag, so
// either opens what the other sealed (tests/field_cipher_unit_test.ts). A seal makes no buffer of its
// own, only the ones node:crypto returns: in the service every buffer costs its allocation and GC.
import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, randomFillSync } from "node:crypto";

const IV_BYTES = 12;
const TAG_BYTES = 16;
const ALGORITHM = "aes-256-gcm";

/** Random bytes drawn a block at a time: each message's IV is the next 12, never handed out twice. */
const IV_BLOCK_BYTES = IV_BYTES * 4096;
let ivBlock = new Uint8Array(0);
let ivAt = 0;

function nextIv(): Uint8Array {
  if (ivAt + IV_BYTES > ivBlock.byteLength) {
    ivBlock = randomFillSync(new Uint8Array(IV_BLOCK_BYTES));
    ivAt = 0;
  }
  return ivBlock.subarray(ivAt, ivAt += IV_BYTES);
}

/**
 * Where a message's text and context are encoded and the sealed message assembled, grown to the
 * largest yet: node:crypto copies what it is given, so views of it serve every seal.
 */
let scratch = new Uint8Array(1024);
const encoder = new TextEncoder();

function scratchOf(bytes: number): Uint8Array {
  if (scratch.byteLength < bytes) scratch = new Uint8Array(Math.max(bytes, 2 * scratch.byteLength));
  return scratch;
}

/** `text` as UTF-8: a view of the scratch, good until its next use. */
function encoded(text: string): Uint8Array {
  const into = scratchOf(3 * text.length);
  return into.subarray(0, encoder.encodeInto(text, into).written);
}

export class FieldCipher {
  readonly #key: Buffer;

  constructor(raw: Uint8Array) {
    if (raw.byteLength !== 32) throw new RangeError(`An AES-256 key is 32 bytes, not ${raw.byteLength}`);
    this.#key = Buffer.from(raw);
  }

  /** `text` sealed under this key, bound to `context` (it opens only with the same context). */
  seal(text: string, context: string): string {
    const iv = nextIv();
    const cipher = createCipheriv(ALGORITHM, this.#key, iv);
    cipher.setAAD(encoded(context));
    const body = cipher.update(encoded(text));
    cipher.final();
    const tag = cipher.getAuthTag();
    const length = IV_BYTES + body.byteLength + TAG_BYTES;
    const message = scratchOf(length);
    message.set(iv, 0);
    message.set(body, IV_BYTES);
    message.set(tag, IV_BYTES + body.byteLength);
    return Buffer.from(message.buffer, message.byteOffset, length).toString("base64");
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
