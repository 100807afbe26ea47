// The integer-range patterns that put numeric bounds of string parameters into the document.
import assert from "node:assert/strict";
import { integerPattern } from "../src/calls/integer_pattern.ts";

Deno.test("an integer pattern matches exactly the numbers of its range, every one checked", () => {
  for (const [min, max] of [[0, 0], [1, 9], [1, 100], [0, 1000], [7, 123], [30, 2592], [99, 101], [1, 90]]) {
    const pattern = integerPattern(min, max);
    for (let n = 0; n <= max * 2 + 20; n++) {
      assert.equal(pattern.test(String(n)), n >= min && n <= max, `${n} in ${min} to ${max}`);
      assert.equal(pattern.test(`00${n}`), n >= min && n <= max, `00${n} in ${min} to ${max}`);
    }
  }
});

Deno.test("an integer pattern refuses what is not a plain decimal integer", () => {
  const pattern = integerPattern(0, 2592000);
  for (const text of ["", "-1", "+1", "1.5", "1e3", " 1", "1 ", "0x10", "2592001", "9".repeat(40), "１"]) {
    assert.equal(pattern.test(text), false, JSON.stringify(text));
  }
  for (const text of ["0", "2592000", "0002592000", "1999999", "2591999"]) {
    assert.ok(pattern.test(text), text);
  }
  assert.equal(integerPattern(1, 100, { leadingZeros: false }).test("010"), false);
});

Deno.test("a signed pattern reaches the largest safe integer exactly, on both sides", () => {
  const max = Number.MAX_SAFE_INTEGER;
  const pattern = integerPattern(0, max, { signed: true });
  for (const text of [String(max), `-${max}`, "0", "-0", "9007199254740990", "999999999999999", "-00042"]) {
    assert.ok(pattern.test(text), text);
  }
  for (
    const text of ["9007199254740992", "-9007199254740992", "9007199254740999", "10000000000000000", "--1"]
  ) {
    assert.equal(pattern.test(text), false, text);
  }
  let seed = 7;
  for (let i = 0; i < 2000; i++) {
    seed = (seed * 48271) % 2147483647;
    const n = BigInt(seed) * BigInt(seed) * 3n;
    assert.equal(pattern.test(String(n)), n <= BigInt(max), String(n));
  }
});
