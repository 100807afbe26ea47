// The signing primitives every signature shares, against node:crypto as the reference.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import { hmacSha256, timingSafeEqual } from "../src/hmac.ts";

Deno.test("hmacSha256 matches the reference for string and byte keys", async () => {
  const cases: [string | Uint8Array, string][] = [
    ["secret", "payload"],
    ["clé ünicode", "données 😀"],
    [new Uint8Array([0, 1, 2, 255]), "bytes key"],
  ];
  for (const [key, data] of cases) {
    const expected = createHmac("sha256", key).update(data, "utf8").digest("hex");
    const mac = await hmacSha256(key, data);
    assert.equal(Buffer.from(mac).toString("hex"), expected);
  }
  // WebCrypto refuses an empty key; every caller treats an empty secret as a wiring fault anyway.
  await assert.rejects(() => hmacSha256("", "data"));
});

Deno.test("timingSafeEqual: equal only for the same string", () => {
  assert.equal(timingSafeEqual("abc", "abc"), true);
  assert.equal(timingSafeEqual("", ""), true);
  assert.equal(timingSafeEqual("abc", "abd"), false);
  assert.equal(timingSafeEqual("abc", "ab"), false);
  assert.equal(timingSafeEqual("ab", "abc"), false);
  assert.equal(timingSafeEqual("é", "e"), false);
});
