// The ledger family on the ledger's own interface, in process: calls refused with LedgerBusy are
// counted one for one, the queue depth is read at scrape time, and a batch the database refuses is
// retried in halves, each split counted.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import type { BilledCommand, DecideState, Decision } from "../src/ledger/command.ts";
import { answer, failure, type Reply, textReply } from "../src/calls/reply.ts";
import type { ReadSet } from "../src/ledger/reads.ts";
import { newEvent } from "../events/catalogue.ts";
import { sha256Hex } from "../src/ids.ts";
import { LedgerBusyError } from "../src/ledger/ledger.ts";
import { enableMetrics, registry } from "../src/metrics/registry.ts";
import { parseExposition, valueOf } from "./helpers/metrics.ts";

const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn });

function command(
  walletId: string,
  decide: (state: DecideState<ReadSet>) => Decision<Reply>,
): BilledCommand<Reply, ReadSet> {
  return {
    walletId,
    price: 1,
    call: { method: "POST", path: "/test", endpoint: "kv", startedAt: performance.now() },
    decide,
    unpaid: () => failure(402, "Insufficient credits"),
  };
}

const write = (walletId: string, key: string) =>
  command(walletId, () =>
    answer(textReply(200, "OK"), {
      events: [
        newEvent("KvWritten", { bucket: "b", key, value: key, expiresAt: "2099-01-01T00:00:00.000Z" }),
      ],
    }));

const scrape = async () => parseExposition(await registry.metrics());

test("metrics ledger: LedgerBusy counted one for one, the queue depth seen, split retries counted", async () => {
  enableMetrics();
  const svc = await inProcessService({}, { maxInFlight: 1, maxQueue: 4 });
  try {
    const walletId = await sha256Hex(await svc.newToken());
    const before = await scrape();
    const blocker = svc.ledger.runBilled(write(walletId, "blocker"));
    const calls = Array.from({ length: 10 }, (_, i) => svc.ledger.runBilled(write(walletId, `k${i}`)));
    const during = await scrape();
    const outcomes = await Promise.allSettled([blocker, ...calls]);
    const busy = outcomes.filter((o) =>
      o.status === "rejected" && o.reason instanceof LedgerBusyError
    ).length;
    assert.ok(busy >= 5, `${busy} refused`);
    const after = await scrape();
    assert.equal(
      valueOf(after, "credit_api_ledger_busy_total") - valueOf(before, "credit_api_ledger_busy_total"),
      busy,
    );
    assert.ok(valueOf(during, "credit_api_ledger_queue_depth") >= 1, "calls were queued at the scrape");
    assert.equal(valueOf(after, "credit_api_ledger_queue_capacity"), 4);
    assert.equal(valueOf(after, "credit_api_ledger_queue_depth"), 0);

    // An outbox row without its columns: only the database finds out, when the batch is written.
    const refused = command(walletId, () => ({
      ...answer(textReply(200, "OK")),
      effects: [{ type: "queueDelivery", delivery: { walletId } } as never],
    }));
    const retriesBefore = valueOf(after, "credit_api_ledger_batch_retries_total");
    const second = svc.ledger.runBilled(write(walletId, "second"));
    const batch = Promise.allSettled(
      [write(walletId, "a"), refused, write(walletId, "b")].map((c) => svc.ledger.runBilled(c)),
    );
    await second;
    const settled = await batch;
    assert.deepEqual(settled.map((o) => o.status), ["fulfilled", "rejected", "fulfilled"]);
    const retries = valueOf(await scrape(), "credit_api_ledger_batch_retries_total") - retriesBefore;
    assert.ok(retries >= 1, `${retries} split retries`);
  } finally {
    await svc.close();
  }
});
