// The cuts every bounded text goes through: never a broken character, `cut` true only when cut.
import assert from "node:assert/strict";
import { codePointLength, cutChars, cutCodePoints, cutUtf8, utf8Length } from "../src/text_bounds.ts";

Deno.test("cutUtf8 keeps whole characters within the byte limit", () => {
  assert.deepEqual(cutUtf8("abc", 3), { text: "abc", cut: false });
  assert.deepEqual(cutUtf8("aé", 2), { text: "a", cut: true });
  assert.deepEqual(cutUtf8("😀😀", 7), { text: "😀", cut: true });
  const long = "é".repeat(1000);
  const { text, cut } = cutUtf8(long, 1001);
  assert.deepEqual([utf8Length(text), cut], [1000, true]);
});

Deno.test("cutChars counts UTF-16 units and never splits a surrogate pair", () => {
  assert.deepEqual(cutChars("abcd", 4), { text: "abcd", cut: false });
  assert.deepEqual(cutChars("abcd", 2), { text: "ab", cut: true });
  assert.deepEqual(cutChars("a😀b", 2), { text: "a", cut: true });
  assert.deepEqual(cutChars("a😀b", 3), { text: "a😀", cut: true });
});

Deno.test("cutCodePoints counts characters as Telegram does: an emoji is one", () => {
  assert.deepEqual(cutCodePoints("😀😀😀", 3), { text: "😀😀😀", cut: false });
  assert.deepEqual(cutCodePoints("😀😀😀", 2), { text: "😀😀", cut: true });
  assert.deepEqual(cutCodePoints("ab", 0), { text: "", cut: true });
  assert.equal(codePointLength("a😀é"), 3);
  assert.equal(codePointLength(""), 0);
});
