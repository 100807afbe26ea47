// The pure parts of the input bounds: counting characters in place, telling a strict path, the
// connection gate, and the bounded body reader on a stream that never ends.
import assert from "node:assert/strict";
import { Hono } from "hono";
import { hasAtMostCodePoints } from "../src/code_points.ts";
import { isStrictPath } from "../src/http/strict_path.ts";
import { connectionGate } from "../src/net/connection_gate.ts";
import { readTextBody } from "../src/http/body.ts";
import { InputRefused } from "../src/http/input_refused.ts";
import type { AppEnv } from "../src/http/env.ts";

Deno.test("characters are code points, counted without an array", () => {
  assert.equal(hasAtMostCodePoints("", 0), true);
  assert.equal(hasAtMostCodePoints("abc", 3), true);
  assert.equal(hasAtMostCodePoints("abcd", 3), false);
  const emoji = "\u{1F600}"; // two UTF-16 units, one character
  assert.equal(hasAtMostCodePoints(emoji.repeat(3), 3), true);
  assert.equal(hasAtMostCodePoints(emoji.repeat(3) + "a", 3), false);
  assert.equal(hasAtMostCodePoints("a" + emoji.repeat(2), 3), true);
  // A lone surrogate counts as one character, as the spread operator counts it.
  const lone = "\ud800\ud800x";
  assert.equal(hasAtMostCodePoints(lone, 3), [...lone].length <= 3);
  assert.equal(hasAtMostCodePoints(lone, 2), [...lone].length <= 2);
  // A huge string is decided at once from its length.
  assert.equal(hasAtMostCodePoints("a".repeat(5_000_000), 1000), false);
});

Deno.test("a strict path decodes to UTF-8", () => {
  for (const path of ["/kv/b/k", "/kv/b/a%25C3", "/kv/b/%C3%A9", "/kv/b/%F0%9F%98%80", "/kv/%2Fslash"]) {
    assert.equal(isStrictPath(path), true, path);
  }
  for (const path of ["/kv/b/%ZZ", "/kv/b/a%C3", "/kv/b/%", "/kv/b/%4", "/kv/b/%ED%A0%80", "/kv/b/%C0%AF"]) {
    assert.equal(isStrictPath(path), false, path);
  }
});

Deno.test("the connection gate bounds each address and the total", () => {
  const gate = connectionGate({ maxConnections: 3, maxConnectionsPerIp: 2 });
  assert.equal(gate.admit("a"), "admitted");
  assert.equal(gate.admit("a"), "admitted");
  assert.equal(gate.admit("a"), "too many from this address");
  assert.equal(gate.admit("b"), "admitted");
  assert.equal(gate.admit("c"), "too many");
  assert.equal(gate.open, 3);
  gate.release("a");
  assert.equal(gate.admit("c"), "admitted");
  gate.release("nobody");
  assert.equal(gate.open, 3);
});

Deno.test("a body past the limit is refused after reading little of it", async () => {
  const app = new Hono<AppEnv>();
  app.post("/", async (c) => c.text(await readTextBody(c, 10)));
  app.onError((error) =>
    error instanceof InputRefused
      ? new Response(error.message, { status: error.status })
      : Promise.reject(error)
  );
  let pulls = 0;
  let cancelled = false;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      controller.enqueue(new Uint8Array(4).fill(0x61));
    },
    cancel() {
      cancelled = true;
    },
  });
  const refused = await app.request("/", { method: "POST", body: endless });
  assert.equal(refused.status, 413);
  assert.equal(await refused.text(), "Payload Too Large: the body must be at most 10 bytes");
  assert.ok(pulls <= 5, `${pulls} chunks read`);
  assert.equal(cancelled, true);

  const declared = await app.request("/", { method: "POST", body: "x", headers: { "content-length": "11" } });
  assert.equal(declared.status, 413);
  const fits = await app.request("/", { method: "POST", body: "héllo" });
  assert.equal(await fits.text(), "héllo");
  const bad = await app.request("/", { method: "POST", body: new Uint8Array([0xff]) });
  assert.deepEqual([bad.status, await bad.text()], [400, "Invalid body: must be valid UTF-8"]);
});
