// Webhook calls against local servers: status classification, no redirects, timeouts, and the
// delivery-time SSRF check that connects only to vetted addresses.

import assert from "node:assert/strict";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { postJson, type Resolver, vetAddresses } from "../src/webhooks/http_post.ts";
import { freePort } from "./helpers/service.ts";

interface Received {
  method: string;
  path: string;
  headers: Headers;
  body: string;
}

interface LocalServer {
  port: number;
  origin: string;
  received: Received[];
  close(): Promise<void>;
}

// A loopback HTTP server that records every request; `reply` picks the answer.
function startServer(reply: (request: Request) => Response | Promise<Response>): LocalServer {
  const received: Received[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    received.push({
      method: request.method,
      path: url.pathname,
      headers: request.headers,
      body: await request.text(),
    });
    return await reply(request);
  });
  const port = server.addr.port;
  return { port, origin: `http://127.0.0.1:${port}`, received, close: () => server.shutdown() };
}

function resolveTo(...addresses: string[]): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = (hostname: string) => {
    calls.push(hostname);
    return Promise.resolve(addresses);
  };
  return Object.assign(resolve, { calls });
}

const local = { allowPrivate: true };

Deno.test("200 is ok and the server gets the exact body and headers", async () => {
  const server = startServer(() => new Response("thanks"));
  try {
    const body = JSON.stringify({ subject: "Grüße 👋", text: "a\nb" }, null, 2);
    const result = await postJson(`${server.origin}/hooks/in?x=1`, body, {
      ...local,
      headers: { "X-Custom": "abc 123", Authorization: "Bearer s3cret", "webhook-id": "msg_1" },
    });
    assert.equal(result.ok, true);
    assert.equal(result.status, 200);
    assert.ok(result.latencyMs >= 0);
    assert.equal(server.received.length, 1);
    const [got] = server.received;
    assert.equal(got.method, "POST");
    assert.equal(got.path, "/hooks/in");
    assert.equal(got.body, body);
    assert.equal(got.headers.get("content-type"), "application/json");
    assert.equal(got.headers.get("content-length"), String(new TextEncoder().encode(body).byteLength));
    assert.equal(got.headers.get("x-custom"), "abc 123");
    assert.equal(got.headers.get("authorization"), "Bearer s3cret");
    assert.equal(got.headers.get("webhook-id"), "msg_1");
    assert.equal(got.headers.get("host"), `127.0.0.1:${server.port}`);
  } finally {
    await server.close();
  }
});

Deno.test("given headers cannot replace Content-Type, Host or Content-Length", async () => {
  const server = startServer(() => new Response(null, { status: 204 }));
  try {
    const result = await postJson(server.origin, "{}", {
      ...local,
      headers: { "content-type": "text/plain", Host: "evil.example", "Content-Length": "999" },
    });
    assert.deepEqual({ ok: result.ok, status: result.status }, { ok: true, status: 204 });
    const [got] = server.received;
    assert.equal(got.headers.get("content-type"), "application/json");
    assert.equal(got.headers.get("host"), `127.0.0.1:${server.port}`);
    assert.equal(got.body, "{}");
  } finally {
    await server.close();
  }
});

Deno.test("statuses: 5xx, 408 and 429 are retryable, other 4xx are not", async () => {
  const server = startServer((request) => {
    const status = Number(new URL(request.url).pathname.slice(1));
    return new Response("no", { status });
  });
  try {
    const expected: [number, boolean, string][] = [
      [500, true, "HTTP 500 Internal Server Error"],
      [503, true, "HTTP 503 Service Unavailable"],
      [429, true, "HTTP 429 Too Many Requests"],
      [408, true, "HTTP 408 Request Timeout"],
      [404, false, "HTTP 404 Not Found"],
      [400, false, "HTTP 400 Bad Request"],
      [410, false, "HTTP 410 Gone"],
    ];
    for (const [status, retryable, error] of expected) {
      const result = await postJson(`${server.origin}/${status}`, "{}", { ...local, headers: {} });
      assert.equal(result.ok, false);
      if (result.ok) continue;
      assert.deepEqual({ status: result.status, retryable: result.retryable, error: result.error }, {
        status,
        retryable,
        error,
      });
    }
  } finally {
    await server.close();
  }
});

Deno.test("a 302 is a failure and its target is never called", async () => {
  const server = startServer((request) =>
    new URL(request.url).pathname === "/target"
      ? new Response("reached")
      : new Response(null, { status: 302, headers: { Location: "/target" } })
  );
  try {
    const result = await postJson(`${server.origin}/start`, "{}", { ...local, headers: {} });
    assert.deepEqual(result.ok ? result : { ...result, latencyMs: 0 }, {
      ok: false,
      status: 302,
      latencyMs: 0,
      error: "redirect to /target not followed",
      retryable: false,
    });
    assert.deepEqual(server.received.map((r) => r.path), ["/start"]);
  } finally {
    await server.close();
  }
});

Deno.test("a server slower than the timeout fails retryably", async () => {
  const { promise: released, resolve: release } = Promise.withResolvers<void>();
  const server = startServer(async () => {
    await released;
    return new Response("late");
  });
  try {
    const result = await postJson(server.origin, "{}", { ...local, headers: {}, timeoutMs: 300 });
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.equal(result.error, "timeout after 300 ms");
    assert.equal(result.retryable, true);
    assert.equal(result.status, undefined);
    assert.ok(result.latencyMs >= 290 && result.latencyMs < 3000, `latency ${result.latencyMs}`);
  } finally {
    release();
    await server.close();
  }
});

Deno.test("a resolver that never answers is bounded by the timeout", async () => {
  const result = await postJson("https://hook.test/", "{}", {
    headers: {},
    timeoutMs: 200,
    resolve: () => new Promise<string[]>(() => {}),
  });
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.deepEqual([result.error, result.retryable], ["timeout after 200 ms", true]);
});

Deno.test("a refused connection fails retryably", async () => {
  const port = freePort();
  const result = await postJson(`http://127.0.0.1:${port}/`, "{}", { ...local, headers: {} });
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.deepEqual([result.error, result.retryable, result.status], ["connection refused", true, undefined]);
});

Deno.test("a response body is read up to 64 KiB and the connection dropped", async () => {
  const chunk = new Uint8Array(16 * 1024);
  let sent = 0;
  const server = startServer(() => {
    // An endless body: only the client's cap ends this exchange.
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    return new Response(stream, { status: 200 });
  });
  try {
    const result = await postJson(server.origin, "{}", { ...local, headers: {}, timeoutMs: 5000 });
    assert.equal(result.ok, true);
    assert.equal(result.status, 200);
  } finally {
    await server.close();
  }
  assert.ok(sent >= 64 * 1024 && sent < 16 * 1024 * 1024, `server streamed ${sent} bytes`);
});

Deno.test("without allowPrivate a name resolving to loopback is blocked before connecting", async () => {
  const server = startServer(() => new Response("should not be reached"));
  try {
    const resolve = resolveTo("127.0.0.1");
    const result = await postJson(`https://hook.test:${server.port}/`, "{}", { headers: {}, resolve });
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.equal(result.error, "target not allowed");
    assert.equal(result.retryable, true, "DNS answers change, as for a name that does not resolve");
    assert.deepEqual(resolve.calls, ["hook.test"]);
    assert.equal(server.received.length, 0);
  } finally {
    await server.close();
  }
});

Deno.test("without allowPrivate loopback literals are blocked in every spelling", async () => {
  const server = startServer(() => new Response("should not be reached"));
  try {
    const resolve = resolveTo("8.8.8.8");
    const plain = await postJson(`http://127.0.0.1:${server.port}/`, "{}", { headers: {}, resolve });
    assert.deepEqual(plain.ok ? plain : [plain.error, plain.retryable], ["scheme http: not allowed", false]);
    for (const host of ["127.0.0.1", "2130706433", "0x7f000001", "127.1", "[::ffff:127.0.0.1]", "[::1]"]) {
      const result = await postJson(`https://${host}:${server.port}/`, "{}", { headers: {}, resolve });
      assert.equal(result.ok, false, host);
      if (result.ok) continue;
      assert.equal(result.error, "target not allowed", host);
      assert.equal(result.retryable, false);
    }
    assert.deepEqual(resolve.calls, [], "literals are judged without DNS");
    assert.equal(server.received.length, 0);
  } finally {
    await server.close();
  }
});

Deno.test("vetting keeps only public addresses", async () => {
  assert.deepEqual(await vetAddresses("hook.test", { resolve: resolveTo("127.0.0.1", "8.8.8.8") }), [
    "8.8.8.8",
  ]);
  assert.deepEqual(
    await vetAddresses("hook.test", { resolve: resolveTo("10.0.0.5", "2606:4700:4700::1111", "fd00::1") }),
    ["2606:4700:4700::1111"],
  );
  const internal = resolveTo("10.0.0.1", "::1", "169.254.169.254", "fd00:ec2::254", "::ffff:192.168.0.1");
  assert.deepEqual(await vetAddresses("hook.test", { resolve: internal }), []);
  assert.deepEqual(
    await vetAddresses("hook.test", { resolve: resolveTo("127.0.0.1", "junk"), allowPrivate: true }),
    [
      "127.0.0.1",
    ],
  );
  assert.deepEqual(await vetAddresses("[::1]", {}), []);
  assert.deepEqual(await vetAddresses("8.8.8.8", {}), ["8.8.8.8"]);
});

Deno.test("the connection goes to the vetted address, resolved once, never through system DNS", async () => {
  const server = startServer(() => new Response("ok"));
  try {
    // "hook.test" does not exist in DNS: reaching the server proves the vetted address was used.
    let calls = 0;
    const rebinding: Resolver = () => Promise.resolve(++calls === 1 ? ["127.0.0.1"] : ["192.0.2.1"]);
    const result = await postJson(`http://hook.test:${server.port}/x`, "{}", {
      ...local,
      headers: {},
      resolve: rebinding,
    });
    assert.equal(result.ok, true);
    assert.equal(calls, 1);
    assert.equal(server.received.length, 1);
    assert.equal(server.received[0].headers.get("host"), `hook.test:${server.port}`);
  } finally {
    await server.close();
  }
});

Deno.test("a failed or empty lookup is retryable", async () => {
  for (const resolve of [() => Promise.reject(new Error("ENOTFOUND")), resolveTo()]) {
    const result = await postJson("https://hook.test/", "{}", { headers: {}, resolve });
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.deepEqual([result.error, result.retryable], ["target not allowed", true]);
  }
});

Deno.test("a name that does not resolve and a name resolving to non-public addresses fail alike", async () => {
  const outcomes = [];
  for (
    const resolve of [
      () => Promise.reject(new Error("getaddrinfo ENOTFOUND hook.test")),
      resolveTo(),
      resolveTo("10.0.0.7"),
      resolveTo("127.0.0.1", "::1"),
      resolveTo("169.254.169.254"),
    ]
  ) {
    const result = await postJson("https://hook.test/", "{}", { headers: {}, resolve });
    const { latencyMs: _, ...rest } = result;
    outcomes.push(rest);
  }
  assert.deepEqual(outcomes, Array(5).fill({ ok: false, error: "target not allowed", retryable: true }));
});

Deno.test("bad input fails without calling anyone and never echoes header values", async () => {
  const server = startServer(() => new Response("should not be reached"));
  try {
    const cases: [string, Record<string, string>, string][] = [
      ["not a url", {}, "invalid url"],
      [`${server.origin}/`, { "X-Token": "s3cret\r\nX-Injected: 1" }, 'invalid value of header "X-Token"'],
      [`${server.origin}/`, { "Bad Name": "v" }, 'invalid header name "Bad Name"'],
      [`http://user:s3cret@127.0.0.1:${server.port}/`, {}, "credentials in url not allowed"],
      ["ftp://example.com/", {}, "scheme ftp: not allowed"],
    ];
    for (const [url, headers, error] of cases) {
      const result = await postJson(url, "{}", { ...local, headers });
      assert.equal(result.ok, false);
      if (result.ok) continue;
      assert.deepEqual([result.error, result.retryable], [error, false]);
      assert.ok(!result.error.includes("s3cret"));
    }
    assert.equal(server.received.length, 0);
  } finally {
    await server.close();
  }
});

// HTTPS through a vetted address: SNI and certificate checks still use the URL's host name.

function makeCertificate(): { cert: string; key: string } | null {
  try {
    const dir = Deno.makeTempDirSync();
    const output = new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=hook.test",
        "-addext",
        "subjectAltName=DNS:hook.test",
        "-keyout",
        `${dir}/key.pem`,
        "-out",
        `${dir}/cert.pem`,
      ],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    const pair = output.success
      ? { cert: Deno.readTextFileSync(`${dir}/cert.pem`), key: Deno.readTextFileSync(`${dir}/key.pem`) }
      : null;
    Deno.removeSync(dir, { recursive: true });
    return pair;
  } catch {
    return null; // no openssl on this machine
  }
}

const certificate = makeCertificate();

interface TlsServer {
  port: number;
  serverNames: string[];
  hosts: string[];
  close(): Promise<void>;
}

async function startTlsServer(pair: { cert: string; key: string }): Promise<TlsServer> {
  const serverNames: string[] = [];
  const hosts: string[] = [];
  const server = https.createServer({
    ...pair,
    // Records the SNI the client sent.
    SNICallback(name, done) {
      serverNames.push(name);
      done(null, undefined);
    },
  }, (request, response) => {
    hosts.push(request.headers.host ?? "");
    request.resume();
    request.on("end", () => response.end("ok"));
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    serverNames,
    hosts,
    close: () => new Promise<void>((closed) => server.close(() => closed())),
  };
}

Deno.test({
  name: "https to a vetted address sends SNI and verifies the certificate for the host name",
  ignore: certificate === null,
  async fn() {
    const server = await startTlsServer(certificate!);
    try {
      const options = { ...local, headers: {}, resolve: resolveTo("127.0.0.1"), ca: certificate!.cert };
      const result = await postJson(`https://hook.test:${server.port}/`, "{}", options);
      assert.deepEqual(result.ok ? result.status : result, 200);
      assert.deepEqual(server.serverNames, ["hook.test"]);
      assert.deepEqual(server.hosts, [`hook.test:${server.port}`]);

      const wrongName = await postJson(`https://other.test:${server.port}/`, "{}", options);
      assert.equal(wrongName.ok, false);
      if (!wrongName.ok) {
        assert.match(wrongName.error, /^TLS error: .*other\.test/);
        assert.equal(wrongName.retryable, true);
      }

      const untrusted = await postJson(`https://hook.test:${server.port}/`, "{}", {
        ...options,
        ca: undefined,
      });
      assert.equal(untrusted.ok, false);
      if (!untrusted.ok) assert.match(untrusted.error, /^TLS error: .*certificate/);
      assert.equal(server.hosts.length, 1, "no request passed a failed certificate check");
    } finally {
      await server.close();
    }
  },
});
