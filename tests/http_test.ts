// What every answer carries: request ids, 405s, problem JSON, health checks and Idempotency-Key.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { eventually } from "./helpers/wait.ts";

Deno.test("HTTP conventions", async (t) => {
  const svc = await startService();
  try {
    const token = await newToken(svc);
    const client = walletClient(svc, token);

    await t.step("every answer has X-Request-Id, echoed when the client sent one", async () => {
      const mine = await call(svc, "GET", "/healthz", { headers: { "x-request-id": "my-trace-123" } });
      assert.equal(mine.headers.get("x-request-id"), "my-trace-123");
      const generated = await client.get("/kv/b/k");
      assert.match(generated.headers.get("x-request-id")!, /^[A-Za-z0-9]{20}$/);
      const unauthorized = await call(svc, "GET", "/token");
      assert.ok(unauthorized.headers.get("x-request-id"));
    });

    await t.step(
      "X-Service-Request-Id is always the service's own id, whatever the client sent",
      async () => {
        const none = await client.get("/kv/b/k");
        const own = none.headers.get("x-service-request-id")!;
        assert.match(own, /^[A-Za-z0-9]{20}$/);
        assert.equal(none.headers.get("x-request-id"), own, "without a client id both carry ours");
        const sent = await client.get("/kv/b/k", { "x-request-id": own });
        assert.equal(sent.headers.get("x-request-id"), own, "echoed");
        assert.match(sent.headers.get("x-service-request-id")!, /^[A-Za-z0-9]{20}$/);
        assert.notEqual(
          sent.headers.get("x-service-request-id"),
          own,
          "a client cannot reuse another call's id",
        );
        const malformed = await client.get("/kv/b/k", { "x-request-id": "two words" });
        assert.equal(malformed.headers.get("x-request-id"), malformed.headers.get("x-service-request-id"));
        assert.match(malformed.headers.get("x-request-id")!, /^[A-Za-z0-9]{20}$/);
      },
    );

    await t.step("a known path with another method is 405 with Allow; an unknown path 404", async () => {
      const put = await call(svc, "PUT", "/kv/b/k", { token });
      assert.equal(put.status, 405);
      assert.equal(put.text, "Method Not Allowed");
      assert.equal(put.headers.get("allow"), "DELETE, GET, HEAD, POST");
      assert.equal((await call(svc, "PUT", "/token", { token })).status, 405);
      assert.equal((await call(svc, "POST", "/recharge", { token })).status, 405);
      const unknown = await call(svc, "GET", "/nowhere", { token });
      assert.deepEqual([unknown.status, unknown.text], [404, "Not Found"]);
    });

    await t.step(
      "a trailing slash is another path: 404, never a 405 whose Allow lists the method",
      async () => {
        for (const method of ["GET", "POST", "DELETE", "PUT"]) {
          for (const path of ["/webhook/", "/token/", "/webhook/abc/"]) {
            const answer = await call(svc, method, path, { token });
            assert.deepEqual([answer.status, answer.text, answer.headers.get("allow")], [
              404,
              "Not Found",
              null,
            ], `${method} ${path}`);
          }
        }
        assert.equal(
          (await call(svc, "GET", "/webhook", { token })).status,
          200,
          "without the slash it is served",
        );
      },
    );

    await t.step("Accept: application/problem+json turns errors into RFC 9457 problems", async () => {
      const headers = { accept: "application/problem+json" };
      const missing = await client.get("/kv/b/absent", headers);
      assert.equal(missing.status, 404);
      assert.equal(missing.headers.get("content-type"), "application/problem+json");
      assert.deepEqual(missing.json(), {
        type: "about:blank",
        title: "Not Found",
        status: 404,
        detail: "Key Not Found",
      });
      assert.equal(missing.cost, 1);
      const anonymous = await call(svc, "GET", "/token", { headers });
      assert.equal(anonymous.json().detail, "Unauthorized");
      assert.equal(anonymous.json().status, 401);
      const ok = await client.post("/kv/b/k", "v", headers);
      assert.equal(ok.text, "OK", "success answers are unchanged");
    });

    await t.step("healthz and readyz are free and need no token", async () => {
      const health = await call(svc, "GET", "/healthz");
      assert.deepEqual([health.status, health.text, health.headers.get("x-cost")], [200, "OK", null]);
      const ready = await call(svc, "GET", "/readyz");
      assert.deepEqual([ready.status, ready.text], [200, "OK"]);
    });

    await t.step("an Idempotency-Key retry gets the first answer and is not charged twice", async () => {
      const key = { "idempotency-key": "write-42" };
      const first = await client.post("/kv/idem/k", "first", key);
      assert.deepEqual([first.status, first.text], [200, "OK"]);
      const retry = await client.post("/kv/idem/k", "first", key);
      assert.deepEqual([retry.status, retry.text, retry.cost, retry.balance], [
        200,
        "OK",
        first.cost,
        first.balance,
      ]);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      const balance = (await client.get("/token")).json().wallet;
      assert.equal(balance, first.balance! - 1, "only the GET /token was charged since");
    });

    await t.step("the same key with another body or path is 422 and changes nothing", async () => {
      const key = { "idempotency-key": "write-43" };
      await client.post("/kv/idem/k2", "one", key);
      const otherBody = await client.post("/kv/idem/k2", "two", key);
      assert.equal(otherBody.status, 422);
      assert.match(otherBody.text, /^Idempotency-Key "write-43" was already used for a different request$/);
      const otherPath = await client.delete("/kv/idem/k2", key);
      assert.equal(otherPath.status, 422);
      assert.equal((await client.get("/kv/idem/k2")).text, "one");
    });

    await t.step("a failed first answer is replayed too; a bad key is 400", async () => {
      const key = { "idempotency-key": "delete-missing" };
      const first = await client.delete("/kv/idem/none", key);
      assert.equal(first.status, 404);
      await client.post("/kv/idem/none", "now it exists");
      const retry = await client.delete("/kv/idem/none", key);
      assert.deepEqual([retry.status, retry.text, retry.cost], [404, "Key Not Found", 1]);
      assert.equal((await client.get("/kv/idem/none")).status, 200, "the retry did not delete");
      const tooLong = await client.post("/kv/idem/k3", "v", { "idempotency-key": "k".repeat(65) });
      assert.equal(tooLong.status, 400);
      assert.equal(tooLong.text, "Invalid Idempotency-Key: must be 1 to 64 printable characters");
    });

    await t.step("concurrent retries with one key apply once", async () => {
      const key = { "idempotency-key": "race-1" };
      const before = (await client.get("/token")).json().wallet;
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => client.post("/kv/idem/race", "v", key)),
      );
      assert.ok(answers.every((a) => a.status === 200));
      const after = (await client.get("/token")).json().wallet;
      assert.equal(after, before - 2, "one write and one GET /token");
    });
  } finally {
    await svc.dispose();
  }
});

Deno.test("one JSON log line per request, with the request id and never the token", async () => {
  const svc = await startService({ env: { LOG_REQUESTS: "1" } });
  try {
    const token = await newToken(svc);
    const res = await call(svc, "GET", "/kv/b/k", { token, headers: { "x-request-id": "trace-log-1" } });
    assert.equal(res.status, 404);
    await new Promise((r) => setTimeout(r, 200));
    const lines = svc.output().split("\n").filter((l) => l.includes('"trace-log-1"'));
    assert.equal(lines.length, 1);
    const line = JSON.parse(lines[0]);
    // The client's id is logged beside the service's own, never instead of it.
    assert.equal(line.clientRequestId, "trace-log-1");
    assert.equal(line.requestId, res.headers.get("x-service-request-id"));
    assert.match(line.requestId, /^[A-Za-z0-9]{20}$/);
    assert.equal(line.level, "info");
    assert.equal(line.method, "GET");
    assert.equal(line.path, "/kv/b/k");
    assert.equal(line.status, 404);
    assert.equal(typeof line.latencyMs, "number");
    assert.ok(!svc.output().includes(token), "the token is never logged");

    // A client that sends another call's id gets a line of its own: both keep their own requestId.
    const replayed = await call(svc, "GET", "/kv/b/k", {
      token,
      headers: { "x-request-id": line.requestId },
    });
    const both = await eventually("the second line", () => {
      const found = svc.output().split("\n").filter((l) => l.includes(line.requestId));
      return found.length === 2 ? found.map((l) => JSON.parse(l)) : undefined;
    });
    assert.deepEqual(both.map((l) => [l.requestId, l.clientRequestId]), [
      [line.requestId, "trace-log-1"],
      [replayed.headers.get("x-service-request-id"), line.requestId],
    ]);
    const plain = await call(svc, "GET", "/kv/b/k", { token });
    const own = await eventually("the plain call's line", () => {
      return svc.output().split("\n").find((l) => l.includes(plain.headers.get("x-service-request-id")!));
    });
    assert.ok(!("clientRequestId" in JSON.parse(own)), "no clientRequestId when none was sent");
  } finally {
    await svc.dispose();
  }
});
