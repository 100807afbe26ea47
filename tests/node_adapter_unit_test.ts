// How the node:http adapter frames an answer the app gave whole: Content-Length from its bytes, a
// body-less one (Response(null)) of a status that may carry a body says 0, and HEAD, 204 and 304
// carry none, as RFC 9110 section 8.6 asks.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { nodeListener } from "../src/http/node_adapter.ts";
import { closedWithin, openRaw } from "./helpers/raw_http.ts";

const answers: Record<string, () => Response> = {
  "/text": () => new Response("hello"),
  "/empty": () => new Response(null, { status: 200 }),
  "/none": () => new Response(null, { status: 204 }),
  "/unchanged": () => new Response(null, { status: 304 }),
};

/** The raw answer to one request line on its own connection. */
async function rawAnswer(port: number, method: string, path: string): Promise<string> {
  const connection = await openRaw(port);
  await connection.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  await closedWithin(connection, 5_000);
  connection.close();
  return connection.received();
}

function headerOf(answer: string, name: string): string | undefined {
  return answer.match(new RegExp(`\\r\\n${name}: ([^\\r]*)\\r\\n`, "i"))?.[1];
}

Deno.test("the adapter frames each answer by its bytes and its status", async () => {
  const server = createServer(nodeListener((request) => answers[new URL(request.url).pathname](), {
    maxBodyBytes: 1024,
    closing: () => false,
    onError: (error) => {
      throw error;
    },
  }));
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const { port } = server.address() as AddressInfo;
  try {
    const text = await rawAnswer(port, "GET", "/text");
    assert.equal(headerOf(text, "content-length"), "5", text);
    assert.ok(text.endsWith("\r\n\r\nhello"), text);

    const empty = await rawAnswer(port, "GET", "/empty");
    assert.equal(headerOf(empty, "content-length"), "0", empty);
    assert.equal(headerOf(empty, "transfer-encoding"), undefined, empty);

    for (const [method, path] of [["HEAD", "/text"], ["GET", "/none"], ["GET", "/unchanged"]]) {
      const answer = await rawAnswer(port, method, path);
      assert.equal(headerOf(answer, "content-length"), undefined, `${method} ${path}: ${answer}`);
      assert.ok(answer.endsWith("\r\n\r\n"), `${method} ${path} has no body: ${answer}`);
    }
  } finally {
    await new Promise((closed) => server.close(closed));
  }
});
