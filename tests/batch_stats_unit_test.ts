// The ledger's batch figures: percentiles over a window, the working time split into Postgres and
// JavaScript, and a fresh window after each summary.
import assert from "node:assert/strict";
import { BatchStats } from "../src/ledger/batch_stats.ts";
import { inProcessService } from "./helpers/in_process.ts";
import { sha256Hex } from "../src/ids.ts";
import type { BatchTiming } from "../src/ledger/batch_stats.ts";
import { answer, failure, textReply } from "../src/calls/reply.ts";

Deno.test("a window's summary: sizes, waits and the work split into Postgres and JavaScript", () => {
  const stats = new BatchStats();
  assert.equal(stats.take(), undefined, "no batch, no line");
  for (let i = 1; i <= 100; i++) stats.record({ size: i, waitMs: i / 10, workMs: 2 * i, dbMs: i });
  const summary = stats.take()!;
  assert.deepEqual([summary.batches, summary.calls], [100, 5050]);
  assert.deepEqual([summary.sizeP50, summary.sizeP99], [51, 100]);
  assert.deepEqual([summary.workMsP50, summary.dbMsP50, summary.jsMsP50], [102, 51, 51]);
  assert.deepEqual([summary.waitMsP50, summary.waitMsP99], [5.1, 10]);
  assert.equal(stats.take(), undefined, "each summary starts a fresh window");
});

Deno.test({
  name: "the ledger times every batch it commits: Postgres within the work, the queue before it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const timings: BatchTiming[] = [];
    const svc = await inProcessService({}, { onBatch: (_size, timing) => timings.push(timing) });
    try {
      const walletId = await sha256Hex(await svc.newToken());
      const call = () =>
        svc.ledger.runBilled({
          walletId,
          price: 1,
          call: { method: "GET", path: "/t", endpoint: "kv", startedAt: performance.now() },
          decide: () => answer(textReply(200, "OK")),
          unpaid: () => failure(402, "Insufficient credits"),
        });
      await Promise.all(Array.from({ length: 20 }, call));
      assert.equal(timings.reduce((n, t) => n + t.size, 0), 20);
      for (const t of timings) {
        assert.ok(t.waitMs >= 0 && t.workMs > 0 && t.dbMs > 0 && t.dbMs <= t.workMs, JSON.stringify(t));
      }
    } finally {
      await svc.close();
    }
  },
});
