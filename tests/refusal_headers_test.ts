// The refusals a client cannot act on without a header: a 408 (the body did not arrive in time)
// carries X-Request-Id and X-Service-Request-Id like every other answer, and a 401 names the
// token header in WWW-Authenticate (RFC 9110 section 11.6.1) as the document's security scheme does.
// A broken request on a connection whose last answer is finished is answered with the ids too.
import assert from "node:assert/strict";
import { call, newToken } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { closedWithin, openRaw } from "./helpers/raw_http.ts";

const REQUEST_MS = 1500;

Deno.test("408 and 401 carry the headers a client needs", async (t) => {
  const svc = await startService({
    env: { HTTP_HEADERS_TIMEOUT_MS: "1000", HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS) },
  });
  try {
    const token = await newToken(svc);

    await t.step("a body that never arrives: 408 with both request ids, the client's echoed", async () => {
      const connection = await openRaw(svc.port);
      await connection.write(
        `POST /kv/b/late HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\nX-Request-Id: late-body-1\r\n` +
          "Content-Length: 4\r\n\r\n",
      );
      await closedWithin(connection, 15_000);
      connection.close();
      const received = connection.received();
      assert.equal(connection.status(), 408, received);
      assert.match(received, /\r\nx-request-id: late-body-1\r\n/i);
      assert.match(received, /\r\nx-service-request-id: [A-Za-z0-9]{20}\r\n/i);
    });

    await t.step("a 408 without a client id carries the service's id in both headers", async () => {
      const connection = await openRaw(svc.port);
      await connection.write(
        `POST /kv/b/late HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\nContent-Length: 9\r\n\r\nabc`,
      );
      await closedWithin(connection, 15_000);
      connection.close();
      const received = connection.received();
      assert.equal(connection.status(), 408, received);
      const own = received.match(/\r\nx-service-request-id: ([A-Za-z0-9]{20})\r\n/i);
      assert.ok(own, received);
      assert.match(received, new RegExp(`\\r\\nx-request-id: ${own[1]}\\r\\n`, "i"));
    });

    await t.step(
      "a broken request after an answered one on its connection gets its 400 with both ids",
      async () => {
        const connection = await openRaw(svc.port);
        await connection.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        const answered = performance.now() + 5_000;
        while (!/\r\n\r\n./s.test(connection.received()) && performance.now() < answered) {
          await new Promise((r) => setTimeout(r, 10));
        }
        assert.equal(connection.status(), 200, connection.received());
        await connection.write("NOT A REQUEST\r\n\r\n");
        await closedWithin(connection, 15_000);
        connection.close();
        const second = connection.received().split(/(?=HTTP\/1\.1 )/)[1] ?? "";
        assert.match(second, /^HTTP\/1\.1 400 /, connection.received());
        const own = second.match(/\r\nx-service-request-id: ([A-Za-z0-9]{20})\r\n/i);
        assert.ok(own, second);
        assert.match(second, new RegExp(`\\r\\nx-request-id: ${own[1]}\\r\\n`, "i"));
      },
    );

    for (
      const [what, headers] of [
        ["no token", {}],
        ["an unknown token", { "x-token": "z".repeat(32) }],
      ] as const
    ) {
      await t.step(`401 for ${what} carries WWW-Authenticate naming X-Token`, async () => {
        const answer = await call(svc, "GET", "/kv/b/k", { headers });
        assert.equal(answer.status, 401);
        assert.equal(answer.headers.get("www-authenticate"), 'Token header="X-Token"');
        assert.ok(answer.headers.get("x-request-id"));
      });
    }

    await t.step("POST /mcp's 401 also names Bearer, its other way in", async () => {
      const answer = await call(svc, "POST", "/mcp", {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      assert.equal(answer.status, 401);
      assert.equal(answer.headers.get("www-authenticate"), 'Token header="X-Token", Bearer');
    });

    await t.step("a 200 carries no WWW-Authenticate", async () => {
      const answer = await call(svc, "GET", "/kv/b/k", { headers: { "x-token": token } });
      assert.equal(answer.status, 404);
      assert.equal(answer.headers.get("www-authenticate"), null);
    });
  } finally {
    await svc.dispose();
  }
});
