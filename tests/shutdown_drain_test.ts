// The drain on SIGTERM (SHUTDOWN_DRAIN_MS): /readyz answers 503 at once, so that a load balancer's
// health check takes the instance out, while every other request, billed ones included, is still
// served, on new connections too; only after the drain does the service stop accepting and exit.
import assert from "node:assert/strict";
import { startService } from "./helpers/service.ts";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { parseConfig } from "../src/config.ts";

const DRAIN_MS = 2500;

/** Resolves once nothing listens on the port any more; the milliseconds since `since`. */
async function closedAfter(port: number, since: number, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    } catch {
      return performance.now() - since;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`Port ${port} still accepts ${timeoutMs} ms after SIGTERM`);
}

Deno.test({
  name: "drain: on SIGTERM /readyz is 503 while billed calls are still served, then the service exits",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const service = await startService({ env: { SHUTDOWN_DRAIN_MS: String(DRAIN_MS) } });
    try {
      const wallet = walletClient(service, await newToken(service));
      assert.equal((await wallet.post("/kv/drain/key", "value")).status, 200);
      assert.equal((await call(service, "GET", "/readyz")).status, 200);

      const signalled = performance.now();
      Deno.kill(service.pid(), "SIGTERM");
      let notReady = await call(service, "GET", "/readyz");
      while (notReady.status === 200 && performance.now() - signalled < 1000) {
        notReady = await call(service, "GET", "/readyz");
      }
      assert.equal(notReady.status, 503, "readyz is 503 within a second of SIGTERM");
      assert.equal(notReady.text, "Shutting down");
      assert.ok(notReady.headers.has("x-request-id") && notReady.headers.has("retry-after"));

      // The rest of the drain: billed reads and writes still answer, each on a connection the
      // service closes after its answer, so every one below opens a new connection.
      let served = 0;
      while (performance.now() - signalled < DRAIN_MS - 700) {
        const read = await wallet.get("/kv/drain/key");
        assert.equal(read.status, 200, `a read during the drain: ${read.text}`);
        assert.equal(read.text, "value");
        assert.equal(read.cost, 1);
        const write = await wallet.post(`/kv/drain/k${served}`, "x");
        assert.equal(write.status, 200, `a write during the drain: ${write.text}`);
        assert.equal((await call(service, "GET", "/readyz")).status, 503);
        served++;
        // 100 credits last the drain.
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.ok(served >= 3, `only ${served} rounds of calls during the drain`);

      const closedAt = await closedAfter(service.port, signalled, DRAIN_MS + 15_000);
      assert.ok(closedAt >= DRAIN_MS, `stopped accepting ${Math.round(closedAt)} ms after SIGTERM`);
      await service.stop();
      assert.match(service.output(), /"stopped"/);
      // Everything written during the drain is there after a start.
      await service.start();
      const after = await wallet.get(`/kv/drain/k${served - 1}`);
      assert.equal(after.status, 200);
    } finally {
      await service.dispose();
    }
  },
});

Deno.test({
  name: "drain: a second SIGTERM ends the drain at once",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const service = await startService({ env: { SHUTDOWN_DRAIN_MS: "600000" } });
    try {
      Deno.kill(service.pid(), "SIGTERM");
      const deadline = performance.now() + 2000;
      while ((await call(service, "GET", "/readyz")).status === 200) {
        assert.ok(performance.now() < deadline, "readyz still 200 two seconds after SIGTERM");
      }
      const second = performance.now();
      Deno.kill(service.pid(), "SIGTERM");
      const closedAt = await closedAfter(service.port, second, 10_000);
      assert.ok(closedAt < 5000, `still accepting ${Math.round(closedAt)} ms after the second SIGTERM`);
    } finally {
      await service.dispose();
    }
  },
});

Deno.test("drain: SHUTDOWN_DRAIN_MS defaults to 0 and takes 0 to 600000 milliseconds", () => {
  const config = (value?: string) => parseConfig(value === undefined ? {} : { SHUTDOWN_DRAIN_MS: value });
  assert.equal((config() as { shutdownDrainMs: number }).shutdownDrainMs, 0);
  assert.equal((config("5000") as { shutdownDrainMs: number }).shutdownDrainMs, 5000);
  for (const bad of ["-1", "600001", "1.5", "soon"]) {
    const parsed = config(bad);
    assert.ok("error" in parsed, `SHUTDOWN_DRAIN_MS=${bad} is refused`);
    assert.match(parsed.error, /^Invalid SHUTDOWN_DRAIN_MS: /);
  }
});
