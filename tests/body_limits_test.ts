// Bodies are bounded everywhere (issue 10): a declared length over a route's limit is refused
// before reading, a streamed body is cut off at the limit, a route without a body never reads one,
// a refused body costs nothing, and ten clients sending 300 MB each leave the memory flat.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { embedded, startService } from "./helpers/service.ts";
import { flood, openRaw } from "./helpers/raw_http.ts";
import { eventually } from "./helpers/wait.ts";
import { TEST_PAYMENT_SECRET } from "./helpers/credits.ts";

const KIB = 1024;
const MIB = 1024 * KIB;
const PROBLEM = { accept: "application/problem+json" };

function memoryMb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Math.round(Number(status.match(new RegExp(`${field}:\\s+(\\d+) kB`))![1]) / 1024);
}

Deno.test("bounded request bodies", async (t) => {
  const svc = await startService({ env: { PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET } });
  try {
    const token = await newToken(svc);
    const client = walletClient(svc, token);

    await t.step("a KV value over 4 KiB is 413, not stored, and not charged", async () => {
      const over = await client.post("/kv/b/big", "a".repeat(4 * KIB + 1), PROBLEM);
      assert.equal(over.status, 413);
      assert.equal(over.headers.get("content-type"), "application/problem+json");
      assert.deepEqual(over.json(), {
        type: "about:blank",
        title: "Content Too Large",
        status: 413,
        detail: "Payload Too Large: the body must be at most 4096 bytes",
      });
      assert.deepEqual([over.cost, over.balance], [0, 100]);
      assert.equal((await client.get("/kv/b/big")).status, 404);
    });

    await t.step("within 4 KiB the 1000-character rule still decides", async () => {
      const ascii = await client.post("/kv/b/ascii", "a".repeat(4 * KIB));
      assert.deepEqual([ascii.status, ascii.text, ascii.cost], [
        400,
        "Invalid value: must be at most 1000 characters",
        1,
      ]);
      const emoji = "\u{1F600}".repeat(1000); // 1000 characters, 4000 bytes
      assert.equal((await client.post("/kv/b/emoji", emoji)).status, 200);
      assert.equal((await client.get("/kv/b/emoji")).text, emoji);
    });

    await t.step("POST /token takes at most 1 KiB, before any wallet exists", async () => {
      const answer = await call(svc, "POST", "/token", {
        body: `token=new&pad=${"x".repeat(KIB)}`,
        headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": "203.0.113.7" },
      });
      assert.deepEqual([answer.status, answer.cost], [413, null]);
      assert.equal(answer.text, "Payload Too Large: the body must be at most 1024 bytes");
    });

    await t.step("JSON bodies over 256 KiB are refused before the route runs", async () => {
      const huge = JSON.stringify({ url: "https://example.com/x", pad: "x".repeat(256 * KIB) });
      for (const [method, path] of [["PUT", "/token/settings"], ["POST", "/webhook"]] as const) {
        const answer = await call(svc, method, path, { token, body: huge });
        assert.equal(answer.status, 413, `${method} ${path}`);
        assert.equal(answer.text, "Payload Too Large: the body must be at most 262144 bytes");
        assert.equal(answer.cost, null, "refused before authentication: nothing billed");
      }
      const payment = await call(svc, "POST", "/payments/webhook", { body: huge });
      assert.equal(payment.status, 413);
      assert.equal((await client.get("/webhook")).json().webhooks.length, 0);
    });

    await t.step("a streamed body without a length is cut off at the route's limit", async () => {
      const head = `POST /kv/b/streamed HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\n` +
        "Transfer-Encoding: chunked\r\n\r\n";
      const result = await flood(svc.port, head, { maxBytes: 300 * MIB, chunked: true });
      assert.equal(result.status, 413, result.received);
      assert.match(result.received, /\r\nx-cost: 0\r\n/i);
      assert.match(result.received, /\r\nconnection: close\r\n/i);
      assert.ok(result.sent < 64 * MIB, `the server stopped reading early (${result.sent} bytes sent)`);
      assert.equal((await client.get("/kv/b/streamed")).status, 404);
    });

    await t.step("Expect: 100-continue is answered only when the route will read the body", async () => {
      const head = (length: number) =>
        `POST /kv/b/expect HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\nExpect: 100-continue\r\n` +
        `Content-Length: ${length}\r\n\r\n`;
      const refused = await flood(svc.port, head(5 * KIB), { maxBytes: 0, chunked: false });
      assert.equal(refused.status, 413, "no 100 Continue: the body is never sent");
      const connection = await openRaw(svc.port);
      await connection.write(head(3));
      await eventually(
        "100 Continue",
        () => connection.received().startsWith("HTTP/1.1 100 Continue\r\n\r\n") || undefined,
      );
      await connection.write("abc");
      await eventually("the answer", () => connection.received().includes("\r\n\r\nOK") || undefined);
      connection.close();
      assert.equal((await client.get("/kv/b/expect")).text, "abc");
    });

    await t.step("routes without a body and unknown paths answer without reading it", async () => {
      for (const path of ["/healthz", "/nowhere", `/webhook/none/test`]) {
        const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\n` +
          "Transfer-Encoding: chunked\r\n\r\n";
        const result = await flood(svc.port, head, { maxBytes: 300 * MIB, chunked: true });
        assert.ok(result.status !== undefined && result.status < 500, `${path}: ${result.received}`);
        assert.match(result.received, /\r\nconnection: close\r\n/i, path);
        assert.ok(result.sent < 64 * MIB, `${path}: ${result.sent} bytes sent`);
      }
    });

    await t.step("ten clients sending 300 MB each at once leave the memory flat", async () => {
      const pid = svc.pid();
      const before = memoryMb(pid, "VmRSS");
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, memoryMb(pid, "VmRSS"));
      }, 20);
      const targets = [
        "POST /kv/b/k",
        "POST /token",
        "PUT /token/settings",
        "POST /webhook",
        "POST /payments/webhook",
        "GET /kv/b/k",
        "DELETE /kv/b/k",
        "POST /webhook/x/test",
        "GET /healthz",
        "POST /nowhere",
      ];
      try {
        const results = await Promise.all(targets.map((target, i) => {
          const chunked = i % 2 === 0;
          const framing = chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${300 * MIB}`;
          const head = `${target} HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\n${framing}\r\n\r\n`;
          return flood(svc.port, head, { maxBytes: 300 * MIB, chunked });
        }));
        peak = Math.max(peak, memoryMb(pid, "VmRSS"));
        for (const [i, result] of results.entries()) {
          assert.ok(result.sent < 64 * MIB, `${targets[i]}: ${result.sent} bytes sent before the refusal`);
        }
      } finally {
        clearInterval(sampler);
      }
      // The embedded database alone holds several hundred MB: there only the growth is bounded.
      // VmHWM is the process's peak over its whole life, between samples included.
      if (!embedded) assert.ok(memoryMb(pid, "VmHWM") < 300, `peak RSS ${memoryMb(pid, "VmHWM")} MB`);
      assert.ok(peak - before < 100, `RSS grew from ${before} to ${peak} MB`);
      assert.equal((await call(svc, "GET", "/healthz")).status, 200);
    });
  } finally {
    await svc.dispose();
  }
});
