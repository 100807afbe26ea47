// Unit tests for the custom template language (CONTRACT section 7): rendering edge cases and the
// limits `validateTemplate` enforces.

import assert from "node:assert/strict";
import {
  MAX_TEMPLATE_BYTES,
  renderTemplate,
  validateTemplate,
} from "../src/webhooks/formats/custom_template.ts";
import { quoteInput } from "../src/storable_text.ts";

const context = {
  subject: "Report",
  text: "Hello",
  empty: "",
  nothing: null,
  zero: 0,
  no: false,
  count: 3,
  urgent: true,
  from: { email: "ann@example.test", name: "Ann Example" },
  nameless: { email: "bob@example.test", name: "" },
  cc: [] as unknown[],
  attachments: [
    { filename: "a.pdf", size: 9 },
    { filename: "b.png", size: 2048 },
  ],
  matrix: [[1, 2], [3, 4]],
};

function render(template: unknown, values: Record<string, unknown> = context): unknown {
  return renderTemplate(template, values);
}

Deno.test("email text full of JSON syntax is delivered verbatim as valid JSON", () => {
  const hostile = 'He said "hi" \\ C:\\path {"a": 1} }} {{ [x]\n\tline2 {{subject}} {{ text }} \u0000 \u2028';
  const template = { text: "{{text}}", quoted: 'Text: "{{text}}"', list: ["{{text}}"] };
  const body = render(template, { ...context, text: hostile });
  const roundTrip = JSON.parse(JSON.stringify(body));
  assert.deepEqual(roundTrip, { text: hostile, quoted: `Text: "${hostile}"`, list: [hostile] });
});

Deno.test("placeholders in values are not expanded again", () => {
  const body = render({ a: "{{text}}", b: "x {{text}} y" }, { text: "{{subject}}", subject: "SECRET" });
  assert.deepEqual(body, { a: "{{subject}}", b: "x {{subject}} y" });
});

Deno.test("dot paths, indexes and negative indexes", () => {
  const body = render({
    name: "{{from.name}}",
    first: "{{attachments[0].filename}}",
    last: "{{attachments[-1].filename}}",
    secondFromEnd: "{{attachments[-2].filename}}",
    nested: "{{matrix[1][0]}}",
    nestedFromEnd: "{{matrix[-1][-1]}}",
  });
  assert.deepEqual(body, {
    name: "Ann Example",
    first: "a.pdf",
    last: "b.png",
    secondFromEnd: "a.pdf",
    nested: 3,
    nestedFromEnd: 4,
  });
});

Deno.test("dot indexes read arrays as brackets do, negative from the end", () => {
  const body = render({
    first: "{{attachments.0.size}}",
    last: "{{attachments.-1.size}}",
    secondFromEnd: "{{attachments.-2.filename}}",
    nested: "{{matrix.1.0}}",
    mixed: "{{matrix[-1].-1}}",
    inText: "{{attachments.0.filename}} and {{attachments.-1.filename}}",
    past: "{{attachments.2.size}}",
    before: "{{attachments.-3.size}}",
    keyOnObject: "{{from.0}}",
    numericKey: "{{byNumber.0}}",
  }, { ...context, byNumber: { "0": "zero" } });
  assert.deepEqual(body, {
    first: 9,
    last: 2048,
    secondFromEnd: "a.pdf",
    nested: 3,
    mixed: 4,
    inText: "a.pdf and b.png",
    past: "",
    before: "",
    keyOnObject: "",
    numericKey: "zero",
  });
  assert.equal(validateTemplate({ size: "{{attachments.-1.size}}" }), null);
});

Deno.test("unresolved paths and out-of-range indexes become empty strings", () => {
  const body = render({
    missing: "{{nope}}",
    deep: "{{from.address.city}}",
    past: "{{attachments[2].filename}}",
    before: "{{attachments[-3].filename}}",
    emptyList: "{{cc[0].email}}",
    indexOnObject: "{{from[0]}}",
    keyOnArray: "{{attachments.length}}",
    inText: "[{{nope}}] [{{attachments[9]}}]",
  });
  assert.deepEqual(body, {
    missing: "",
    deep: "",
    past: "",
    before: "",
    emptyList: "",
    indexOnObject: "",
    keyOnArray: "",
    inText: "[] []",
  });
});

Deno.test("only own properties are read: no prototype or string internals", () => {
  const body = render({
    a: "{{constructor}}",
    b: "{{subject.length}}",
    c: "{{__proto__}}",
    d: "{{from.toString}}",
    e: "{{attachments.constructor.name}}",
  });
  assert.deepEqual(body, { a: "", b: "", c: "", d: "", e: "" });
});

Deno.test("fallbacks: the first non-empty value wins", () => {
  const body = render({
    skipEmptyString: "{{empty|subject}}",
    skipNull: "{{nothing|subject}}",
    skipMissing: "{{nope|from.name}}",
    nameOrEmail: "{{nameless.name|nameless.email}}",
    chain: "{{nope|empty|nothing|text}}",
    zeroIsAValue: "{{zero|count}}",
    falseIsAValue: "{{no|urgent}}",
    emptyListIsAValue: "{{cc|subject}}",
  });
  assert.deepEqual(body, {
    skipEmptyString: "Report",
    skipNull: "Report",
    skipMissing: "Ann Example",
    nameOrEmail: "bob@example.test",
    chain: "Hello",
    zeroIsAValue: 0,
    falseIsAValue: false,
    emptyListIsAValue: [],
  });
});

Deno.test("fallbacks: when all are empty, the last one's value stands", () => {
  const body = render({
    lastNull: "{{nope|nothing}}",
    lastEmpty: "{{nothing|empty}}",
    lastMissing: "{{nothing|nope}}",
    inText: "<{{nope|nothing}}>",
  });
  assert.deepEqual(body, { lastNull: null, lastEmpty: "", lastMissing: "", inText: "<>" });
});

Deno.test("literal fallbacks, with | and spaces inside the quotes", () => {
  const body = render({
    unknown: '{{nameless.name|"unknown"}}',
    notNeeded: '{{from.name|"unknown"}}',
    pipe: '{{nope|"a | b"}}',
    braces: '{{nope|"{{subject}} }}"}}',
    inText: 'From {{nope|"someone"}}!',
    emptyLiteral: '{{nope|""}}',
    onlyLiteral: '{{"fixed"}}',
  });
  assert.deepEqual(body, {
    unknown: "unknown",
    notNeeded: "Ann Example",
    pipe: "a | b",
    braces: "{{subject}} }}",
    inText: "From someone!",
    emptyLiteral: "",
    onlyLiteral: "fixed",
  });
});

Deno.test("an exact placeholder keeps the value's JSON type", () => {
  const body = render({
    number: "{{count}}",
    zero: "{{zero}}",
    boolean: "{{urgent}}",
    falsy: "{{no}}",
    object: "{{from}}",
    array: "{{attachments}}",
    nil: "{{nothing}}",
    string: "{{subject}}",
  });
  assert.deepEqual(body, {
    number: 3,
    zero: 0,
    boolean: true,
    falsy: false,
    object: context.from,
    array: context.attachments,
    nil: null,
    string: "Report",
  });
});

Deno.test("an exact placeholder's object is a copy, not the context's own", () => {
  const body = render({ from: "{{from}}" }) as { from: { name: string } };
  body.from.name = "Changed";
  assert.equal(context.from.name, "Ann Example");
});

Deno.test("placeholders inside a longer string insert text", () => {
  const body = render({
    number: "n={{count}}",
    boolean: "{{urgent}}!",
    object: "from: {{from}}",
    array: "{{matrix}} ",
    nil: "x{{nothing}}y",
    two: "{{subject}}: {{text}}",
    adjacent: "{{subject}}{{text}}",
  });
  assert.deepEqual(body, {
    number: "n=3",
    boolean: "true!",
    object: 'from: {"email":"ann@example.test","name":"Ann Example"}',
    array: "[[1,2],[3,4]] ",
    nil: "xy",
    two: "Report: Hello",
    adjacent: "ReportHello",
  });
});

Deno.test("placeholders inside arrays and nested objects; other values kept", () => {
  const body = render({
    blocks: [
      { type: "header", text: { type: "plain_text", text: "{{subject}}" } },
      ["{{count}}", "#{{count}}", 7, false, null],
    ],
    meta: { level: { deeper: { deepest: "{{from.email}}" } } },
    n: 1.5,
    t: true,
    z: null,
  });
  assert.deepEqual(body, {
    blocks: [
      { type: "header", text: { type: "plain_text", text: "Report" } },
      [3, "#3", 7, false, null],
    ],
    meta: { level: { deeper: { deepest: "ann@example.test" } } },
    n: 1.5,
    t: true,
    z: null,
  });
});

Deno.test("object keys are not templated", () => {
  // Parsed like a request body, where `__proto__` is an ordinary key.
  const template = JSON.parse('{"{{subject}}": "{{subject}}", "__proto__": "{{text}}"}');
  const body = render(template) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body), ["{{subject}}", "__proto__"]);
  assert.equal(body["{{subject}}"], "Report");
  assert.equal(Object.getOwnPropertyDescriptor(body, "__proto__")?.value, "Hello");
  assert.equal(Object.getPrototypeOf(body), Object.prototype);
});

Deno.test("whitespace inside the braces is tolerated", () => {
  const body = render({
    a: "{{ subject }}",
    b: "{{\tfrom.name\n}}",
    c: '{{ nope | "x" }}',
    d: "{{  count  }}",
    outside: " {{count}}",
  });
  assert.deepEqual(body, { a: "Report", b: "Ann Example", c: "x", d: 3, outside: " 3" });
});

Deno.test("text that only looks like a placeholder stays as it is", () => {
  const body = render({
    unclosed: "a {{subject",
    single: "{subject}",
    closeOnly: "subject}}",
    lateClose: "{{ subject } }",
    empty: "",
  });
  assert.deepEqual(body, {
    unclosed: "a {{subject",
    single: "{subject}",
    closeOnly: "subject}}",
    lateClose: "{{ subject } }",
    empty: "",
  });
});

Deno.test("a placeholder validation would reject renders as an empty string", () => {
  assert.deepEqual(render({ a: "{{}}", b: "x{{a..b}}y", c: '{{"open}}' }), { a: "", b: "xy", c: "" });
});

Deno.test("other contexts than an email work the same", () => {
  const body = render({ text: "Wallet {{wallet}} below {{threshold}}", threshold: "{{threshold}}" }, {
    wallet: "w_1",
    threshold: 50,
  });
  assert.deepEqual(body, { text: "Wallet w_1 below 50", threshold: 50 });
});

Deno.test("validateTemplate: accepts a reasonable template", () => {
  assert.equal(validateTemplate({ text: '{{from.name|"unknown"}}: {{subject}}', n: [1, { a: null }] }), null);
  assert.equal(validateTemplate({}), null);
  assert.equal(validateTemplate({ a: "a {{subject" }), null);
});

Deno.test("validateTemplate: the template must be a JSON object", () => {
  for (const template of [null, undefined, "{{subject}}", 3, true, [], [{}]]) {
    assert.equal(validateTemplate(template), "Invalid template: must be a JSON object", String(template));
  }
});

Deno.test("validateTemplate: 2048 bytes are allowed, 2049 are not", () => {
  const overhead = JSON.stringify({ a: "" }).length;
  const exact = { a: "x".repeat(MAX_TEMPLATE_BYTES - overhead) };
  assert.equal(new TextEncoder().encode(JSON.stringify(exact)).length, 2_048);
  assert.equal(validateTemplate(exact), null);
  const over = { a: "x".repeat(MAX_TEMPLATE_BYTES - overhead + 1) };
  assert.equal(validateTemplate(over), "Invalid template: larger than 2048 bytes (2049 bytes serialized)");
  // Bytes, not characters: "é" takes two.
  const accents = { a: "é".repeat((MAX_TEMPLATE_BYTES - overhead) / 2 + 1) };
  assert.match(validateTemplate(accents) ?? "", /larger than 2048 bytes \(2050 bytes/);
});

Deno.test("validateTemplate: 5 levels of nesting are allowed, 6 are not", () => {
  assert.equal(validateTemplate({ a: { b: { c: { d: { e: 1 } } } } }), null);
  assert.equal(validateTemplate({ a: [[[{ e: "x" }]]] }), null);
  const error = "Invalid template: nesting deeper than 5 levels";
  assert.equal(validateTemplate({ a: { b: { c: { d: { e: {} } } } } }), error);
  assert.equal(validateTemplate({ a: [[[[1]]]] }), null);
  assert.equal(validateTemplate({ a: [[[[[1]]]]] }), error);
});

Deno.test("validateTemplate: unparsable placeholders are named", () => {
  assert.equal(validateTemplate({ a: "{{}}" }), "Invalid template: empty placeholder");
  assert.equal(validateTemplate({ a: { b: ["x {{  }} y"] } }), "Invalid template: empty placeholder");
  const cases = [
    "{{a||b}}",
    "{{a|}}",
    "{{from..name}}",
    "{{a[x]}}",
    "{{a b}}",
    '{{"open}}',
    '{{a|"x"y}}',
    "{{{a}}}",
  ];
  for (const placeholder of cases) {
    assert.equal(
      validateTemplate({ a: `text ${placeholder}` }),
      `Invalid template: unparsable placeholder ${
        quoteInput(placeholder.startsWith("{{{") ? "{{{a}}" : placeholder)
      }`,
      placeholder,
    );
  }
  // Keys are not templated, so they are not checked either.
  assert.equal(validateTemplate({ "{{}}": "ok" }), null);
});
