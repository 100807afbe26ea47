// The field cipher (node:crypto, synchronous) and the Web Crypto sealing of aes_gcm.ts write the
// same bytes: each opens what the other sealed, so events sealed before the switch still open.
// A wrong key, context or byte is refused, never read as something else.
import assert from "node:assert/strict";
import { FieldCipher } from "../src/secrets/field_cipher.ts";
import { importAesKey, openText, sealText } from "../src/secrets/aes_gcm.ts";

const raw = () => crypto.getRandomValues(new Uint8Array(32));
const TEXTS = ["", "v4lue", "é ☃ 𝄞 \u0000 \uFFFD", "x".repeat(70_000)];

Deno.test("the field cipher opens what Web Crypto sealed, and Web Crypto opens what it sealed", async () => {
  const bytes = raw();
  const [cipher, web] = [new FieldCipher(bytes), await importAesKey(bytes)];
  for (const text of TEXTS) {
    const context = `w1/${text.length}/KvWritten`;
    assert.equal(cipher.open(await sealText(web, text, context), context), text);
    assert.equal(await openText(web, cipher.seal(text, context), context), text);
  }
});

Deno.test("a sealed field opens only with its key and context, and every message is new", () => {
  const cipher = new FieldCipher(raw());
  const sealed = cipher.seal("s3cr3t", "w1/3/KvWritten");
  assert.notEqual(cipher.seal("s3cr3t", "w1/3/KvWritten"), sealed, "a fresh IV per message");
  assert.ok(!atob(sealed).includes("s3cr3t"));
  assert.equal(cipher.open(sealed, "w1/3/KvWritten"), "s3cr3t");
  assert.throws(() => cipher.open(sealed, "w1/4/KvWritten"));
  assert.throws(() => new FieldCipher(raw()).open(sealed, "w1/3/KvWritten"));
  const bytes = Uint8Array.from(atob(sealed), (c) => c.charCodeAt(0));
  for (const at of [0, 12, bytes.length - 1]) {
    const altered = bytes.slice();
    altered[at] ^= 1;
    assert.throws(() => cipher.open(btoa(String.fromCharCode(...altered)), "w1/3/KvWritten"), `byte ${at}`);
  }
  assert.throws(() => cipher.open("AAAA", "w1/3/KvWritten"), /too short/);
  assert.throws(() => new FieldCipher(new Uint8Array(16)), /32 bytes/);
});
