// Open connections are bounded in total and per client address, on HTTP and SMTP (issue 10), and
// an idle SMTP session is closed. Clients connect from several loopback addresses (127.0.0.x).
import assert from "node:assert/strict";
import net from "node:net";
import { startService } from "./helpers/service.ts";
import { eventually } from "./helpers/wait.ts";

interface Client {
  received(): string;
  closed: Promise<void>;
  isClosed(): boolean;
  write(text: string): void;
  close(): void;
}

/** A TCP client from the loopback address `from`, once connected. */
function connectFrom(from: string, port: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port, localAddress: from });
    let text = "";
    let closedFlag = false;
    const closed = new Promise<void>((done) =>
      socket.on("close", () => {
        closedFlag = true;
        done();
      })
    );
    socket.on("data", (chunk: Uint8Array) => text += new TextDecoder().decode(chunk));
    socket.on("error", () => {/* a reset is a close here */});
    socket.once("connect", () =>
      resolve({
        received: () => text,
        closed,
        isClosed: () => closedFlag,
        write: (data) => socket.write(data),
        close: () => socket.destroy(),
      }));
    socket.once("error", reject);
  });
}

async function healthz(client: Client): Promise<string> {
  client.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  return await eventually("an answer", () => client.received().match(/^HTTP\/1\.1 \d{3}/)?.[0]);
}

Deno.test("HTTP connections are bounded per address and in total", async () => {
  const svc = await startService({ env: { HTTP_MAX_CONNECTIONS: "5", HTTP_MAX_CONNECTIONS_PER_IP: "3" } });
  const open: Client[] = [];
  try {
    for (let i = 0; i < 3; i++) open.push(await connectFrom("127.0.0.1", svc.port));
    assert.equal(await healthz(open[0]), "HTTP/1.1 200");

    const fourth = await connectFrom("127.0.0.1", svc.port);
    await fourth.closed;
    assert.match(fourth.received(), /^HTTP\/1\.1 503 Service Unavailable\r\n/);
    assert.match(fourth.received(), /\r\nretry-after: 1\r\n[^]*Too many connections from this address$/);

    // Another address still gets in, up to the total.
    for (const from of ["127.0.0.2", "127.0.0.3"]) {
      const other = await connectFrom(from, svc.port);
      open.push(other);
      assert.equal(await healthz(other), "HTTP/1.1 200", from);
    }
    const sixth = await connectFrom("127.0.0.4", svc.port);
    await sixth.closed;
    assert.match(sixth.received(), /^HTTP\/1\.1 503 [^]*\r\n\r\nToo many connections$/);

    // A closed connection frees its place.
    open.shift()!.close();
    const again = await eventually("a place for 127.0.0.1", async () => {
      const client = await connectFrom("127.0.0.1", svc.port);
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (!client.isClosed()) return client;
      client.close();
    });
    open.push(again);
    assert.equal(await healthz(again), "HTTP/1.1 200");
  } finally {
    open.forEach((c) => c.close());
    await svc.dispose();
  }
});

Deno.test("SMTP sessions are bounded per address and in total, and an idle one is closed", async () => {
  const svc = await startService({
    smtp: true,
    env: { SMTP_MAX_CONNECTIONS: "4", SMTP_MAX_CONNECTIONS_PER_IP: "2", SMTP_IDLE_TIMEOUT_MS: "3000" },
  });
  const open: Client[] = [];
  const greeted = async (client: Client) =>
    await eventually("a greeting", () => client.received().match(/^\d{3} .*\r\n/)?.[0]);
  try {
    for (const from of ["127.0.0.1", "127.0.0.1"]) {
      const client = await connectFrom(from, svc.smtpPort);
      open.push(client);
      assert.match(await greeted(client), /^220 /);
    }
    const third = await connectFrom("127.0.0.1", svc.smtpPort);
    await third.closed;
    assert.equal(third.received(), "421 4.7.0 Too many connections from your address, try again later\r\n");

    for (const from of ["127.0.0.2", "127.0.0.3"]) {
      const client = await connectFrom(from, svc.smtpPort);
      open.push(client);
      assert.match(await greeted(client), /^220 /, from);
    }
    const fifth = await connectFrom("127.0.0.4", svc.smtpPort);
    await fifth.closed;
    assert.match(fifth.received(), /^421 .*Too many connected clients/);

    // Nobody speaks: every session ends with 421 after the idle time, well before the 5-minute default.
    const started = performance.now();
    await Promise.all(open.map((c) => c.closed));
    assert.ok(performance.now() - started < 30_000);
    for (const client of open) assert.match(client.received(), /\r\n421 .*Timeout - closing connection\r\n$/);
  } finally {
    open.forEach((c) => c.close());
    await svc.dispose();
  }
});
