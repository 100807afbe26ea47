// What Postgres can store and how phrases quote input (issue 21), pure: the storable check, the path
// to the first unstorable string of a JSON value, quoting, and the 400 phrases built from them.
import assert from "node:assert/strict";
import { z } from "zod";
import {
  boundedErrorText,
  findUnstorable,
  isStorable,
  quoteInput,
  storableText,
  UNSTORABLE_RULE,
  unstorablePath,
} from "../src/storable_text.ts";
import {
  fieldPath,
  issuePhrase,
  parseParameters,
  parseStorable,
  shownName,
  unstorableParameterPhrase,
  unstorablePhrase,
  validatorPhrase,
} from "../src/parsed.ts";
import { decodeCursor, encodeCursor } from "../src/kv/listing.ts";
import { incrementValue } from "../src/kv/commands.ts";

const NUL = "\u0000";
const LONE = "\ud800";
const EMOJI = "\u{1F600}";

Deno.test("storable: no U+0000, no unpaired surrogate; pairs and other controls are fine", () => {
  for (const text of ["", "plain", "tab\tnew\nline", "\u007f", EMOJI, "\ufffd", "\u{10FFFF}"]) {
    assert.equal(isStorable(text), true, JSON.stringify(text));
  }
  for (const text of [NUL, `a${NUL}b`, LONE, "\udc00", `${EMOJI[0]}x`, `x${EMOJI[1]}`]) {
    assert.equal(isStorable(text), false, JSON.stringify(text));
  }
});

Deno.test("the path to the first unstorable string, values and names, in document order", () => {
  assert.equal(unstorablePath({ a: "ok", b: [1, true, null, { c: "fine" }] }), undefined);
  assert.deepEqual(unstorablePath(NUL), []);
  assert.deepEqual(unstorablePath({ options: { chat_id: NUL } }), ["options", "chat_id"]);
  assert.deepEqual(unstorablePath({ template: { a: [{ b: "x" }, { c: LONE }] } }), ["template", "a", 1, "c"]);
  assert.deepEqual(unstorablePath({ [`x${NUL}`]: 1 }), [`x${NUL}`], "a name is checked like a value");
  // The first in document order wins, a name before the value it holds, siblings in their order.
  assert.deepEqual(unstorablePath({ a: { b: NUL }, [`c${NUL}`]: 1 }), ["a", "b"]);
  assert.deepEqual(unstorablePath({ [`c${NUL}`]: { d: LONE } }), [`c${NUL}`]);
  assert.deepEqual(unstorablePath([["ok"], ["ok", LONE]]), [1, 1]);
  assert.equal(unstorablePath(new Uint8Array([0, 0xd8])), undefined, "binary data is not text");
});

Deno.test("a nesting far deeper than the stack is walked without recursion", () => {
  const depth = 200_000;
  const deep = JSON.parse(`${"[".repeat(depth)}"\\u0000"${"]".repeat(depth)}`);
  const steps = unstorablePath(deep);
  assert.equal(steps?.length, depth);
  assert.ok(steps!.every((step) => step === 0));
  const fine = JSON.parse(`${'{"a":'.repeat(depth)}"ok"${"}".repeat(depth)}`);
  assert.equal(unstorablePath(fine), undefined);
});

Deno.test("findUnstorable names the path as before, and quotes a name it could not store", () => {
  assert.equal(findUnstorable({ a: { b: ["x", NUL] } }), "a.b[1]");
  assert.equal(findUnstorable(LONE), "value");
  assert.equal(findUnstorable({ a: NUL }, "data"), "data.a");
  assert.equal(findUnstorable({ ok: "fine" }), undefined);
  const where = findUnstorable({ a: { [`k${NUL}`]: 1 } })!;
  assert.equal(where, 'a."k\\u0000"');
  assert.equal(isStorable(where), true);
});

Deno.test("quoteInput escapes what a phrase must not carry raw and bounds it in code points", () => {
  assert.equal(quoteInput("abc"), '"abc"');
  assert.equal(quoteInput(`a${NUL}b\n"\\`), '"a\\u0000b\\u000a\\"\\\\"');
  assert.equal(quoteInput(LONE), '"\\ud800"');
  // 39 letters and an emoji are 40 code points but 41 UTF-16 units: kept whole, never split.
  const edge = "a".repeat(39) + EMOJI;
  assert.equal(quoteInput(edge), `"${edge}"`);
  assert.equal(quoteInput(edge + "b"), `"${edge}…"`);
  assert.equal(quoteInput("a".repeat(38) + EMOJI + EMOJI), `"${"a".repeat(38)}${EMOJI}${EMOJI}"`);
  assert.equal(isStorable(quoteInput("x".repeat(10_000) + NUL)), true);
});

Deno.test("storableText and boundedErrorText replace what cannot be stored", () => {
  assert.equal(storableText("fine"), "fine");
  assert.equal(storableText(`a${NUL}b${LONE}`), "a\ufffdb\ufffd");
  assert.equal(storableText(EMOJI), EMOJI);
  assert.equal(boundedErrorText(`x${NUL}`), "x\ufffd");
  assert.equal(boundedErrorText("a".repeat(400)), "a".repeat(299) + "…");
});

Deno.test("field names in phrases: plain ones as sent, others quoted", () => {
  assert.equal(shownName("chat_id"), "chat_id");
  assert.equal(shownName("Bad Name"), "Bad Name");
  assert.equal(shownName(`a${NUL}`), '"a\\u0000"');
  assert.equal(shownName("line\nbreak"), '"line\\u000abreak"');
  assert.equal(shownName(""), '""');
  assert.equal(shownName("n".repeat(41)), `"${"n".repeat(40)}…"`);
  assert.equal(fieldPath(["template", "a", 0, `b${LONE}`]), 'template.a.0."b\\ud800"');
  assert.equal(fieldPath(["url"], "low_balance_webhook"), "low_balance_webhook.url");
  assert.equal(fieldPath(Array(100_000).fill("a"), "template"), `template.${"a.".repeat(8)}…`);
});

Deno.test("unstorablePhrase names the field as the route's other 400s do", () => {
  const rule = UNSTORABLE_RULE;
  assert.equal(unstorablePhrase({ url: "https://x", ok: ["a"] }), undefined);
  assert.equal(unstorablePhrase({ options: { x: NUL } }), `Invalid options.x: ${rule}`);
  assert.equal(unstorablePhrase({ buckets: ["a", LONE] }), `Invalid buckets.1: ${rule}`);
  assert.equal(unstorablePhrase({ [`x${NUL}`]: 1 }), `Invalid "x\\u0000": ${rule}`);
  assert.equal(unstorablePhrase(`a${NUL}`, "value"), `Invalid value: ${rule}`);
  assert.equal(unstorablePhrase(LONE), `Invalid request: ${rule}`);
  assert.equal(unstorablePhrase({ id: NUL }, "body"), `Invalid body.id: ${rule}`);
});

Deno.test("issuePhrase never carries a field name raw", () => {
  const strict = z.strictObject({ url: z.string() });
  const phraseOf = (input: unknown) => issuePhrase(strict.safeParse(input).error!);
  assert.equal(phraseOf({ url: "u", extra: 1 }), "Unknown field: extra");
  assert.equal(phraseOf({ url: "u", [`x${NUL}`]: 1, "y\n": 2 }), 'Unknown fields: "x\\u0000", "y\\u000a"');
  const many = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`f${i}`, i]));
  assert.equal(phraseOf({ url: "u", ...many }), "Unknown fields: f0, f1, f2, f3, f4, …");
  const record = z.record(z.string(), z.string());
  const nested = issuePhrase(record.safeParse({ [`k${LONE}`]: 1 }).error!, "options");
  assert.match(nested, /^Invalid options\."k\\ud800": /);
  assert.equal(isStorable(nested), true);
});

Deno.test("parameters: the schema's rule first, then storage's, with the value quoted", () => {
  const query = z.object({ cursor: z.string().max(5, "too long").optional() });
  assert.deepEqual(parseParameters(query, { cursor: "abc" }), { ok: true, value: { cursor: "abc" } });
  assert.deepEqual(parseParameters(query, { cursor: NUL }), {
    ok: false,
    phrase: `Invalid cursor "\\u0000": ${UNSTORABLE_RULE}`,
  });
  assert.deepEqual(parseParameters(query, { cursor: `${NUL}123456` }), {
    ok: false,
    phrase: "Invalid cursor: too long",
  });
  assert.equal(unstorableParameterPhrase({ n: "5" }), undefined);
  assert.equal(
    unstorableParameterPhrase({ id: `${"x".repeat(50)}${NUL}` }),
    `Invalid id "${"x".repeat(40)}…": ${UNSTORABLE_RULE}`,
  );
  assert.equal(unstorableParameterPhrase({ [`a${NUL}`]: "ok" }), `Invalid "a\\u0000": ${UNSTORABLE_RULE}`);
  assert.equal(validatorPhrase({ success: true, data: { n: "5" } }), undefined);
  assert.equal(
    validatorPhrase({ success: true, data: { id: NUL } }),
    `Invalid id "\\u0000": ${UNSTORABLE_RULE}`,
  );
  const failed = query.safeParse({ cursor: "toolong" });
  assert.equal(validatorPhrase({ success: false, error: failed.error! }), "Invalid cursor: too long");
});

Deno.test("a body's value is named, not quoted: it may be long", () => {
  assert.deepEqual(parseStorable(z.string(), LONE, "value"), {
    ok: false,
    phrase: `Invalid value: ${UNSTORABLE_RULE}`,
  });
  assert.deepEqual(parseStorable(z.object({ a: z.string() }), { a: "ok" }), { ok: true, value: { a: "ok" } });
});

Deno.test("a listing cursor is refused when it resumes after a key storage could not hold", () => {
  for (const forged of [encodeCursor("b", "", NUL), encodeCursor("b", "", `a${NUL}`)]) {
    const decoded = decodeCursor(forged, "b", "");
    assert.ok("phrase" in decoded, forged);
  }
  assert.deepEqual(decodeCursor(encodeCursor("b", "", "k"), "b", ""), { after: "k" });
  const split = "a".repeat(59) + EMOJI;
  const refused = decodeCursor(split, "b", "");
  assert.ok("phrase" in refused);
  assert.equal(isStorable(refused.phrase), true, "a cut never leaves half a pair");
  assert.ok(refused.phrase.startsWith(`Invalid cursor "${"a".repeat(40)}…": must be a nextCursor`));
});

Deno.test("an increment refused for a stored text quotes it whole characters at a time", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  const value = "a".repeat(39) + EMOJI + "tail\n";
  const entry = { value, version: 3, expires_at: new Date("2026-02-01T00:00:00Z") };
  const decision = incrementValue({ bucket: "b", key: "k", by: 1, ttlSeconds: 0 }, {
    entry: entry as never,
    now,
  });
  const phrase = (decision as { outcome: { body: string } }).outcome.body;
  assert.equal(isStorable(phrase), true);
  assert.ok(phrase.startsWith(`Cannot increment "${"a".repeat(39)}${EMOJI}…": the value must be`), phrase);
});
