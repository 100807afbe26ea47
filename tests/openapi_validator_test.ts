// The independent validator of the answers (Prism, through tests/helpers/openapi_check.ts) really
// catches an answer that breaks the document, and passes one that keeps it.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { answersViolating } from "./helpers/openapi_check.ts";
import type { Exchange } from "./helpers/client.ts";

const TOKEN = { "x-token": "tok_0123456789abcdef" };
const billed = (balance: number, cost = 0) => ({
  "x-request-id": "req-1",
  "x-service-request-id": "Ab3dEf7hIj0lMn2pQr4t",
  "x-balance": String(balance),
  "x-cost": String(cost),
});

function exchange(path: string, status: number, headers: Record<string, string>, body: string): Exchange {
  return { method: "GET", path, requestHeaders: TOKEN, status, headers, body };
}

Deno.test("the validator passes answers that keep the document and names each one that breaks it", async () => {
  const svc = await inProcessService();
  let document: unknown;
  try {
    document = JSON.parse((await svc.request("GET", "/openapi.json")).text);
  } finally {
    await svc.close();
  }
  const json = { "content-type": "application/json" };
  const text = { "content-type": "text/plain; charset=utf-8" };
  const exchanges = [
    exchange(
      "/token/ledger",
      200,
      { ...json, ...billed(90) },
      JSON.stringify({ entries: [], nextCursor: null }),
    ),
    exchange("/kv/shop/apple", 404, { ...text, ...billed(89, 1) }, "Key Not Found"),
    // Wrong: an entry without its fields and a number for a cursor.
    exchange(
      "/token/ledger",
      200,
      { ...json, ...billed(90) },
      JSON.stringify({ entries: [{}], nextCursor: 5 }),
    ),
    // Wrong: a billed answer without X-Balance.
    exchange(
      "/token",
      200,
      { ...json, "x-request-id": "req-2", "x-service-request-id": "Ab3dEf7hIj0lMn2pQr4u", "x-cost": "1" },
      JSON.stringify({
        wallet: 5,
        created: "2026-01-01T00:00:00.000Z",
        hash: "ab",
      }),
    ),
    // Wrong: a status the operation does not have.
    exchange("/token/usage", 418, { ...text, ...billed(90) }, "I'm a teapot"),
    // Wrong: X-Cost of a free view is 0.
    exchange("/token/usage?days=1", 200, { ...json, ...billed(90, 3) }, JSON.stringify({ days: [] })),
  ];
  const violations = await answersViolating(document, exchanges);
  const of = (i: number) => violations.filter((violation) => violation.index === i);
  assert.deepEqual(of(0), []);
  assert.deepEqual(of(1), []);
  assert.ok(
    of(2).some((v) => /entries\.0 must have required property 'at'/.test(v.message)),
    JSON.stringify(of(2)),
  );
  assert.ok(of(2).some((v) => /nextCursor/.test(v.message)));
  assert.ok(of(3).some((v) => /x-balance/i.test(v.message)), JSON.stringify(of(3)));
  assert.ok(of(4).length > 0, "an undocumented status");
  assert.ok(of(5).some((v) => /x-cost/i.test(v.message)), JSON.stringify(of(5)));
});
