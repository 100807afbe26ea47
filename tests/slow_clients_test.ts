// Slow and idle HTTP clients are let go (issue 10): headers must arrive within the headers timeout,
// the whole request within the request timeout, and an idle keep-alive connection closes. The
// service runs with short timeouts so the test is quick; the bounds asserted are generous because
// the machine may be busy, but a connection held indefinitely fails them.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { closedWithin, openRaw, type RawConnection } from "./helpers/raw_http.ts";

const HEADERS_MS = 1000;
const REQUEST_MS = 2000;
const IDLE_MS = 1500;
/** Far above any timeout here: a connection still open by then is held indefinitely. */
const HELD_MS = 15_000;

/** Writes `text` one byte every `everyMs` until it is all sent or the server closes. */
async function trickle(connection: RawConnection, text: string, everyMs: number): Promise<void> {
  for (const char of text) {
    if (connection.isClosed() || !await connection.write(char)) return;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

async function assertLetGo(connection: RawConnection, notBeforeMs: number, what: string) {
  const closedAfter = await closedWithin(connection, HELD_MS);
  connection.close();
  if (closedAfter === "still open") assert.fail(`${what}: still open after ${HELD_MS} ms`);
  assert.ok(closedAfter >= notBeforeMs, `${what}: closed after ${closedAfter} ms, before its timeout`);
  const status = connection.status();
  assert.ok(status === undefined || status === 408, `${what}: ${connection.received()}`);
}

Deno.test("slow and idle HTTP clients are not held", async (t) => {
  const svc = await startService({
    env: {
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
      HTTP_IDLE_TIMEOUT_MS: String(IDLE_MS),
      // The 1,150 connections below all come from 127.0.0.1.
      HTTP_MAX_CONNECTIONS_PER_IP: "2000",
    },
  });
  try {
    const token = await newToken(svc);
    const client = walletClient(svc, token);
    const writeHead = (length: number) =>
      `POST /kv/b/slow HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\nContent-Length: ${length}\r\n\r\n`;

    await t.step("Content-Length: 4 and nothing sent: 408 within the request timeout", async () => {
      const connection = await openRaw(svc.port);
      await connection.write(writeHead(4));
      await assertLetGo(connection, REQUEST_MS - 200, "a declared body that never comes");
      assert.equal(connection.status(), 408);
      assert.equal((await client.get("/kv/b/slow")).status, 404);
    });

    await t.step("a connection that sends nothing is closed after the headers timeout", async () => {
      const connection = await openRaw(svc.port);
      await assertLetGo(connection, HEADERS_MS - 200, "an idle new connection");
    });

    await t.step("headers sent a byte at a time (slowloris) are cut off", async () => {
      const connection = await openRaw(svc.port);
      const sending = trickle(
        connection,
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${"a".repeat(200)}`,
        50,
      );
      await assertLetGo(connection, HEADERS_MS - 200, "slowloris");
      await sending;
    });

    await t.step("a body sent a byte at a time is cut off and nothing is stored", async () => {
      const connection = await openRaw(svc.port);
      await connection.write(writeHead(500));
      const sending = trickle(connection, "v".repeat(500), 50);
      await assertLetGo(connection, REQUEST_MS - 200, "a trickled body");
      await sending;
      assert.equal((await client.get("/kv/b/slow")).status, 404);
    });

    await t.step("an idle keep-alive connection closes; it served requests until then", async () => {
      const connection = await openRaw(svc.port);
      for (let i = 1; i <= 3; i++) {
        await connection.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        while (connection.received().split("HTTP/1.1 200").length <= i && !connection.isClosed()) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }
      assert.equal(connection.received().split("HTTP/1.1 200 OK").length - 1, 3);
      assert.match(connection.received(), /Keep-Alive: timeout=1\r\n/);
      const closedAfter = await closedWithin(connection, HELD_MS);
      connection.close();
      assert.notEqual(closedAfter, "still open");
    });

    await t.step("1,000 idle, 100 slowloris and 50 trickled connections are all let go", async () => {
      const idle = await Promise.all(Array.from({ length: 1000 }, () => openRaw(svc.port)));
      const slow = await Promise.all(Array.from({ length: 100 }, () => openRaw(svc.port)));
      const trickled = await Promise.all(Array.from({ length: 50 }, () => openRaw(svc.port)));
      const sending = [
        ...slow.map((c) => trickle(c, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${"a".repeat(100)}`, 200)),
        ...trickled.map(async (c) => {
          await c.write(writeHead(500));
          await trickle(c, "v".repeat(500), 200);
        }),
      ];
      // Meanwhile the service answers everyone else.
      assert.equal((await call(svc, "GET", "/healthz")).status, 200);
      const all = [...idle, ...slow, ...trickled];
      const results = await Promise.all(all.map((c) => closedWithin(c, HELD_MS)));
      all.forEach((c) => c.close());
      await Promise.all(sending);
      const held = results.filter((r) => r === "still open").length;
      assert.equal(held, 0, `${held} of ${all.length} connections still open after ${HELD_MS} ms`);
      assert.equal((await call(svc, "GET", "/healthz")).status, 200);
    });
  } finally {
    await svc.dispose();
  }
});

Deno.test("SIGTERM lets the request in flight finish, then the service exits", async () => {
  const svc = await startService();
  try {
    const token = await newToken(svc);
    const connection = await openRaw(svc.port);
    await connection.write(
      `POST /kv/b/late HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\nContent-Length: 5\r\n\r\nhel`,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stopping = svc.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await connection.write("lo");
    await stopping;
    await closedWithin(connection, HELD_MS);
    connection.close();
    assert.equal(connection.status(), 200, connection.received());
    assert.match(connection.received(), /\r\n\r\nOK$/);
    await svc.start();
    assert.equal((await walletClient(svc, token).get("/kv/b/late")).text, "hello");
  } finally {
    await svc.dispose();
  }
});
