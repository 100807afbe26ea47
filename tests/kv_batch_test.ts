// KV commands sharing one ledger transaction: each sees what the ones before it in the batch did,
// because the batch's reads are folded forward with its own events. Increments, conditional writes
// and listings are exact by construction, not by luck of timing.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import type { BilledCommand, CallDecision, DecideState, LedgerResult } from "../src/ledger/command.ts";
import { read, type ReadSet } from "../src/ledger/reads.ts";
import { kvBucketChangesRead, kvEntryRead, kvPageRead } from "../projections/kv.ts";
import { deleteValue, incrementValue, type KvReply, writeValue } from "../src/kv/commands.ts";
import { listKeys } from "../src/kv/listing.ts";
import { parseEtagCondition } from "../src/kv/preconditions.ts";
import { failure } from "../src/calls/reply.ts";
import { sha256Hex } from "../src/ids.ts";

const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn });

function command<R extends ReadSet>(
  walletId: string,
  reads: R,
  decide: (state: DecideState<R>) => CallDecision<KvReply>,
): BilledCommand<KvReply, R> {
  return {
    walletId,
    price: 1,
    call: { method: "POST", path: "/kv", endpoint: "kv", startedAt: performance.now() },
    reads,
    decide,
    unpaid: () => failure(402, "Insufficient credits"),
  };
}

const entry = (walletId: string, key: string) => ({
  entry: read(kvEntryRead, { walletId, bucket: "b", key }),
});
const incr = (walletId: string) =>
  command(
    walletId,
    entry(walletId, "n"),
    ({ reads, now }) =>
      incrementValue({ bucket: "b", key: "n", by: 1, ttlSeconds: 0 }, { entry: reads.entry, now }),
  );
const put = (walletId: string, key: string, ifNoneMatch?: string) =>
  command(walletId, entry(walletId, key), ({ reads, now }) =>
    writeValue(
      { bucket: "b", key, value: key, ttlSeconds: 0 },
      {
        now,
        entry: reads.entry,
        conditions: ifNoneMatch ? { ifNoneMatch: parseEtagCondition(ifNoneMatch) } : {},
      },
    ));
const list = (walletId: string) => {
  const listing = { bucket: "b", prefix: "k", limit: 100 };
  const reads = {
    page: read(kvPageRead, { walletId, ...listing }),
    changes: read(kvBucketChangesRead, { walletId, bucket: "b" }),
  };
  return command(
    walletId,
    reads,
    ({ reads, now }) => listKeys(listing, { page: reads.page, changes: reads.changes, now }),
  );
};
const remove = (walletId: string, key: string) =>
  command(walletId, entry(walletId, key), ({ reads }) => deleteValue(reads.entry));

const body = (r: LedgerResult<KvReply>) => r.kind === "answered" ? r.outcome.body : assert.fail(r.kind);
const status = (r: LedgerResult<KvReply>) => r.kind === "answered" ? r.outcome.status : assert.fail(r.kind);

test("increments that share a batch each see the one before: 1 to n, each once", async () => {
  const sizes: number[] = [];
  const svc = await inProcessService({}, { maxInFlight: 1, onBatch: (size) => sizes.push(size) });
  try {
    const walletId = await sha256Hex(await svc.newToken());
    const results = await Promise.all(Array.from({ length: 40 }, () => svc.ledger.runBilled(incr(walletId))));
    assert.deepEqual(results.map(body), Array.from({ length: 40 }, (_, i) => String(i + 1)));
    assert.ok(Math.max(...sizes) > 1, `a batch held several increments (sizes ${sizes.join(",")})`);
  } finally {
    await svc.close();
  }
});

test("in one batch, If-None-Match sees an earlier create and a listing sees writes and deletes", async () => {
  const sizes: number[] = [];
  const svc = await inProcessService({}, { maxInFlight: 1, onBatch: (size) => sizes.push(size) });
  try {
    const walletId = await sha256Hex(await svc.newToken());
    await svc.ledger.runBilled(put(walletId, "k0"));
    sizes.length = 0;
    const blocker = svc.ledger.runBilled(put(walletId, "other"));
    const results = await Promise.all([
      blocker,
      svc.ledger.runBilled(list(walletId)), // loaded with k0 only
      svc.ledger.runBilled(put(walletId, "k1", "*")),
      svc.ledger.runBilled(put(walletId, "k1", "*")), // must see the create above
      svc.ledger.runBilled(put(walletId, "k2")),
      svc.ledger.runBilled(remove(walletId, "k0")),
      svc.ledger.runBilled(list(walletId)), // must see all of it
    ]);
    assert.ok(
      Math.max(...sizes) >= 6,
      `the calls after the first shared one batch (sizes ${sizes.join(",")})`,
    );
    assert.deepEqual(results.slice(1).map(status), [200, 200, 412, 200, 200, 200]);
    const keys = (r: LedgerResult<KvReply>) => JSON.parse(body(r)).keys.map((k: { key: string }) => k.key);
    assert.deepEqual(keys(results[1]), ["k0"]);
    assert.deepEqual(keys(results[6]), ["k1", "k2"]);
  } finally {
    await svc.close();
  }
});
