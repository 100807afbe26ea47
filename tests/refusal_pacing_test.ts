// A client that keeps earning refusals is answered slowly past a burst, so looping on them cannot
// take the service from other tenants; other clients, and ordinary outcomes like 404, are not held.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { REFUSAL_HOLD_MS, REFUSALS_PER_10_S } from "../src/http/refusal_pacing.ts";

Deno.test({
  name: "refusals past a client's burst are held; another client's are not, nor any 404",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const svc = await inProcessService();
    try {
      const other = await svc.newToken();
      const timed = async (path: string, init: { token?: string; body?: string } = {}) => {
        const started = performance.now();
        const res = await svc.request("POST", path, init);
        return { status: res.status, ms: performance.now() - started };
      };
      // A form that does not ask for a new token: a 400 before authentication, counted for the network.
      const refused = () => timed("/token", { body: "token=old" });
      for (let i = 0; i < REFUSALS_PER_10_S - 10; i++) {
        assert.ok((await refused()).ms < REFUSAL_HOLD_MS / 2, "within the burst: at once");
      }
      // Past it, a client that keeps looping gets them at about REFUSALS_PER_10_S / 10 a second.
      const started = performance.now();
      for (let i = 0; i < 40; i++) assert.equal((await refused()).status, 400);
      const seconds = (performance.now() - started) / 1000;
      assert.ok(seconds >= 2, `40 refusals past the burst took ${seconds.toFixed(2)} s`);
      const beside = await timed("/kv/b/k", { token: other, body: "\u0000" });
      assert.deepEqual(
        [beside.status, beside.ms < REFUSAL_HOLD_MS / 2],
        [400, true],
        "another wallet is not held",
      );
      const notFound = performance.now();
      for (let i = 0; i < 5; i++) {
        assert.equal((await svc.request("GET", "/kv/b/missing", { token: other })).status, 404);
      }
      assert.ok(performance.now() - notFound < REFUSAL_HOLD_MS, "404s never count");
    } finally {
      await svc.close();
    }
  },
});
