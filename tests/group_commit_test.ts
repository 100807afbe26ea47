// Group commit keeps every invariant: many calls share a transaction, each keeps its own outcome,
// and a fault in one command fails only that command.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { auditLedger } from "../src/tasks/audit.ts";
import type { BilledCommand, DecideState, Decision, LedgerResult } from "../src/ledger/command.ts";
import { answer, failure, type Reply, textReply } from "../src/calls/reply.ts";
import { read, type ReadSet } from "../src/ledger/reads.ts";
import { newEvent } from "../events/catalogue.ts";
import { sha256Hex } from "../src/ids.ts";
import { kvEntryRead, readKv } from "../projections/kv.ts";
import { readValue } from "../src/kv/commands.ts";
import { auditOf, startService } from "./helpers/service.ts";
import { newToken, walletClient } from "./helpers/client.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { CallerThrottledError, FAULTS_BEFORE_THROTTLE } from "../src/ledger/fault_throttle.ts";

const test = (name: string, fn: (t: Deno.TestContext) => Promise<void>) =>
  Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn });

function command<R extends ReadSet>(
  walletId: string,
  decide: (state: DecideState<R>) => Decision<Reply>,
  price = 1,
  reads?: R,
): BilledCommand<Reply, R> {
  return {
    walletId,
    price,
    call: { method: "POST", path: "/test", endpoint: "kv", startedAt: performance.now() },
    reads,
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

/** A read of key `key` declared up front, answered from the batch's view of it. */
const readKey = (walletId: string, key: string) =>
  command(walletId, ({ reads }) => readValue(reads.entry), 1, {
    entry: read(kvEntryRead, { walletId, bucket: "b", key }),
  });

const answered = (r: LedgerResult<Reply>) => r.kind === "answered" ? r : assert.fail(`unexpected ${r.kind}`);

test("concurrent calls share transactions and keep the overdraft rule", async () => {
  const sizes: number[] = [];
  const svc = await inProcessService({}, { onBatch: (size) => sizes.push(size) });
  try {
    const walletId = await sha256Hex(await svc.newToken());
    const results = await Promise.all(
      Array.from({ length: 150 }, (_, i) => svc.ledger.runBilled(write(walletId, `k${i}`))),
    );
    const statuses = results.map((r) => answered(r).outcome.status);
    assert.equal(statuses.filter((s) => s === 200).length, 100);
    assert.equal(statuses.filter((s) => s === 402).length, 50);
    assert.ok(Math.max(...sizes) > 1, `some batch held several calls (sizes ${sizes.join(",")})`);
    assert.equal(sizes.reduce((a, b) => a + b, 0), 150);
    assert.deepEqual((await auditLedger(svc.db.sql)).mismatches, []);
  } finally {
    await svc.close();
  }
});

test("mixed outcomes in one batch: 402, 404 and 200 side by side, on several wallets", async () => {
  const sizes: number[] = [];
  const svc = await inProcessService({}, { maxInFlight: 1, onBatch: (size) => sizes.push(size) });
  try {
    const rich = await sha256Hex(await svc.newToken());
    const poor = await sha256Hex(await svc.newToken());
    // Drain the poor wallet to 1 credit.
    await Promise.all(Array.from({ length: 99 }, (_, i) => svc.ledger.runBilled(write(poor, `drain${i}`))));
    sizes.length = 0;
    const results = await Promise.all([
      svc.ledger.runBilled(write(rich, "a")),
      svc.ledger.runBilled(command(poor, () => failure(404, "Key Not Found"))),
      svc.ledger.runBilled(write(poor, "too-late")), // the balance is 0 by now
      svc.ledger.runBilled(command(rich, () => failure(404, "Key Not Found"))),
      svc.ledger.runBilled(write(rich, "b")),
      svc.ledger.runBilled(command(rich, () => answer(textReply(200, "free")), 0)),
    ]);
    assert.deepEqual(
      results.map((r) => [answered(r).outcome.status, answered(r).cost, answered(r).balance]),
      [
        [200, 1, 99],
        [404, 1, 0],
        [402, 0, 0],
        [404, 1, 98],
        [200, 1, 97],
        [200, 0, 97],
      ],
    );
    assert.ok(sizes.some((s) => s > 1), `the six calls shared a transaction (sizes ${sizes.join(",")})`);
    assert.equal(
      await readKv(svc.db.sql, { walletId: poor, bucket: "b", key: "too-late", now: new Date() }),
      undefined,
    );
    assert.equal(await readKv(svc.db.sql, { walletId: rich, bucket: "b", key: "b", now: new Date() }), "b");
    assert.deepEqual((await auditLedger(svc.db.sql)).mismatches, []);
  } finally {
    await svc.close();
  }
});

test("a later call in a batch sees what an earlier one wrote", async () => {
  const svc = await inProcessService({}, { maxInFlight: 1 });
  try {
    const walletId = await sha256Hex(await svc.newToken());
    const blocker = svc.ledger.runBilled(write(walletId, "first"));
    const [, , seen] = await Promise.all([
      blocker,
      svc.ledger.runBilled(write(walletId, "seen")),
      svc.ledger.runBilled(readKey(walletId, "seen")),
    ]);
    assert.equal(answered(seen).outcome.body, "seen");
  } finally {
    await svc.close();
  }
});

test("a fault injected into a batch fails only its own command", async () => {
  const sizes: number[] = [];
  const svc = await inProcessService({}, { maxInFlight: 1, onBatch: (size) => sizes.push(size) });
  try {
    const walletId = await sha256Hex(await svc.newToken());
    const faulty = command(walletId, () => {
      throw new Error("injected fault");
    });
    const outcomes = await Promise.allSettled([
      svc.ledger.runBilled(write(walletId, "before")),
      svc.ledger.runBilled(write(walletId, "one")),
      svc.ledger.runBilled(faulty),
      svc.ledger.runBilled(write(walletId, "two")),
    ]);
    assert.deepEqual(outcomes.map((o) => o.status), ["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /injected fault/);
    for (const key of ["before", "one", "two"]) {
      assert.equal(await readKv(svc.db.sql, { walletId, bucket: "b", key, now: new Date() }), key);
    }
    assert.equal(
      (await svc.db.sql`select balance from wallets where wallet_id = ${walletId}`)[0].balance,
      97,
    );
    assert.deepEqual((await auditLedger(svc.db.sql)).mismatches, []);
  } finally {
    await svc.close();
  }
});

test("with a transaction in flight, the calls of one turn take the free slot together, not the first alone", async () => {
  const sizes: number[] = [];
  const svc = await inProcessService({}, { maxInFlight: 2, onBatch: (size) => sizes.push(size) });
  try {
    const walletId = await sha256Hex(await svc.newToken());
    // The first call finds nothing in flight and starts at once; the four after it, in the same turn,
    // find one slot free and share it (they wait on the wallet's lock, so they commit second).
    const first = svc.ledger.runBilled(write(walletId, "first"));
    const burst = Promise.all(["a", "b", "c", "d"].map((key) => svc.ledger.runBilled(write(walletId, key))));
    const answers = await Promise.all([first, burst]);
    assert.deepEqual(sizes, [1, 4], "two transactions, not the second call alone and then three");
    assert.deepEqual(
      [answers[0], ...answers[1]].map((r) => r.kind === "answered" ? r.balance : r.kind),
      [99, 98, 97, 96, 95],
    );
    assert.deepEqual((await auditLedger(svc.db.sql)).mismatches, []);
  } finally {
    await svc.close();
  }
});

test("an unstorable string fails its command alone; the neighbours commit in the same transaction", async () => {
  const sizes: number[] = [];
  const svc = await inProcessService({}, { maxInFlight: 1, onBatch: (size) => sizes.push(size) });
  try {
    const [one, two] = await Promise.all(
      [svc.newToken(), svc.newToken()].map(async (t) => sha256Hex(await t)),
    );
    const blocker = svc.ledger.runBilled(write(one, "blocker"));
    const poisoned = (value: string) =>
      command(two, () =>
        answer(textReply(200, "OK"), {
          events: [
            newEvent("KvWritten", { bucket: "b", key: "p", value, expiresAt: "2099-01-01T00:00:00.000Z" }),
          ],
        }));
    const batch = Promise.allSettled([
      svc.ledger.runBilled(write(one, "a")),
      svc.ledger.runBilled(poisoned("nul \u0000 inside")),
      svc.ledger.runBilled(write(two, "b")),
      svc.ledger.runBilled(poisoned("lone \ud800 surrogate")),
      svc.ledger.runBilled(write(one, "c")),
    ]);
    await blocker;
    const outcomes = await batch;
    assert.deepEqual(outcomes.map((o) => o.status), [
      "fulfilled",
      "rejected",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /cannot store, at KvWritten.*value/);
    assert.deepEqual(sizes, [1, 5], "one transaction for the five, none retried");
    assert.equal(
      await readKv(svc.db.sql, { walletId: two, bucket: "b", key: "p", now: new Date() }),
      undefined,
    );
    assert.equal(await readKv(svc.db.sql, { walletId: two, bucket: "b", key: "b", now: new Date() }), "b");
    const balances = await svc.db
      .sql`select wallet_id, balance from wallets where wallet_id in (${one}, ${two})`;
    assert.deepEqual(
      Object.fromEntries(balances.map((r) => [r.wallet_id, r.balance])),
      { [one]: 97, [two]: 99 },
      "the failed commands charged nothing",
    );
    assert.deepEqual((await auditLedger(svc.db.sql)).mismatches, []);
  } finally {
    await svc.close();
  }
});

test("a command the database refuses costs its neighbours a few transactions, never one each", async () => {
  const sizes: number[] = [];
  const svc = await inProcessService({}, { maxInFlight: 1, onBatch: (size) => sizes.push(size) });
  try {
    const walletId = await sha256Hex(await svc.newToken());
    // An outbox row without its columns: only the database finds out, when the batch is written.
    const refused = command(walletId, () => ({
      ...answer(textReply(200, "OK")),
      effects: [{ type: "queueDelivery", delivery: { walletId } } as never],
    }));
    const blocker = svc.ledger.runBilled(write(walletId, "blocker"));
    const calls = Array.from({ length: 16 }, (_, i) => i === 9 ? refused : write(walletId, `k${i}`));
    const batch = Promise.allSettled(calls.map((c) => svc.ledger.runBilled(c)));
    await blocker;
    const outcomes = await batch;
    assert.deepEqual(outcomes.map((o) => o.status === "fulfilled"), calls.map((c) => c !== refused));
    // Halves: the first 8 commit; of the rest, the refused one's quarter is halved down to it.
    assert.deepEqual(sizes, [1, 8, 1, 2, 4], "6 transactions where one by one took 17");
    assert.equal(
      (await svc.db.sql`select balance from wallets where wallet_id = ${walletId}`)[0].balance,
      84,
    );
  } finally {
    await svc.close();
  }
});

test("a caller whose calls keep faulting is refused for a while; mail and runs are not", async () => {
  const svc = await inProcessService();
  try {
    const walletId = await sha256Hex(await svc.newToken());
    const byCaller = (c: BilledCommand<Reply, ReadSet>) => ({ ...c, byClient: true });
    const faulty = command(walletId, () => {
      throw new Error("injected fault");
    });
    for (let i = 0; i < FAULTS_BEFORE_THROTTLE; i++) {
      await assert.rejects(svc.ledger.runBilled(byCaller(faulty)), /injected fault/);
    }
    const refused = await svc.ledger.runBilled(byCaller(write(walletId, "x"))).catch((e) => e);
    assert.ok(refused instanceof CallerThrottledError, String(refused));
    assert.ok(refused.retryAfterSeconds >= 1 && refused.retryAfterSeconds <= 60);
    const mail = answered(await svc.ledger.runBilled(write(walletId, "y")));
    assert.equal(mail.outcome.status, 200, "a command not held to the caller's throttle still runs");
    const other = await sha256Hex(await svc.newToken());
    assert.equal(answered(await svc.ledger.runBilled(byCaller(write(other, "z")))).outcome.status, 200);
  } finally {
    await svc.close();
  }
});

test("declared reads in a batch see the batch's own earlier writes and deletes", async () => {
  const svc = await inProcessService({}, { maxInFlight: 1 });
  try {
    const walletId = await sha256Hex(await svc.newToken());
    await svc.ledger.runBilled(write(walletId, "gone"));
    const readBack = (key: string) => readKey(walletId, key);
    const remove = command(
      walletId,
      () => answer(textReply(200, "OK"), { events: [newEvent("KvDeleted", { bucket: "b", key: "gone" })] }),
    );
    const blocker = svc.ledger.runBilled(write(walletId, "first"));
    const results = await Promise.all([
      blocker,
      svc.ledger.runBilled(readBack("fresh")), // prefetched as missing
      svc.ledger.runBilled(write(walletId, "fresh")),
      svc.ledger.runBilled(readBack("fresh")), // must see the write above
      svc.ledger.runBilled(readBack("gone")), // prefetched as present
      svc.ledger.runBilled(remove),
      svc.ledger.runBilled(readBack("gone")), // must see the delete
    ]);
    assert.deepEqual(results.slice(1).map((r) => answered(r).outcome.status), [404, 200, 200, 200, 200, 404]);
    assert.equal(answered(results[3]).outcome.body, "fresh");
  } finally {
    await svc.close();
  }
});

Deno.test("the audit is clean after a benchmark-like load of 64 concurrent clients", async () => {
  const svc = await startService({ env: { PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET } });
  try {
    const token = await newToken(svc);
    await buyCredits(svc, token);
    const client = walletClient(svc, token);
    await client.post("/kv/bench/key", "value");
    const until = Date.now() + 2000;
    let served = 0;
    await Promise.all(Array.from({ length: 64 }, async (_, i) => {
      while (Date.now() < until) {
        const res = i % 2 ? await client.get("/kv/bench/key") : await client.post(`/kv/bench/k${i}`, "v");
        assert.equal(res.status, 200);
        served++;
      }
    }));
    const balance = (await client.get("/token")).json().wallet;
    assert.equal(balance, 1_000_100 - 1 - served - 1, "every served call cost exactly 1");
    const audit = await auditOf(svc);
    assert.equal(audit.code, 0, audit.stdout);
  } finally {
    await svc.dispose();
  }
});
