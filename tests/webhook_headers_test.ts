// Custom webhook headers: what configuration accepts is exactly what a delivery can send.
import assert from "node:assert/strict";
import { HeaderMap } from "../src/webhooks/config/input.ts";
import { HEADER_VALUE, RESERVED_HEADERS, TRANSPORT_HEADERS } from "../src/webhooks/headers.ts";

function problem(headers: Record<string, string>): string | undefined {
  const result = HeaderMap.safeParse(headers);
  return result.success ? undefined : result.error.issues[0].message;
}

Deno.test("a header value is accepted when configured exactly when it can be sent", () => {
  for (let code = 0; code <= 0x2ff; code++) {
    const value = `a${String.fromCharCode(code)}b`;
    assert.equal(
      problem({ "X-Test": value }) === undefined,
      HEADER_VALUE.test(value),
      `U+${code.toString(16)}`,
    );
  }
  assert.equal(problem({ "X-Price": "5 €" }), "must contain only Latin-1 characters (up to U+00FF)");
  assert.equal(problem({ "X-Name": "Zoë" }), undefined);
});

Deno.test("every header the service or the transport sets is refused, in any case", () => {
  for (const name of TRANSPORT_HEADERS) assert.ok(RESERVED_HEADERS.has(name), name);
  for (const name of RESERVED_HEADERS) {
    assert.equal(problem({ [name.toUpperCase()]: "v" }), "is set by the service", name);
  }
  assert.equal(problem({ Authorization: "Bearer x" }), undefined);
});
