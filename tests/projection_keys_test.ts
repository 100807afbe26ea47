// Every read model's row ids agree, without a database: the key a fold files an event's row under
// (keyOf), the row the fold makes, and the id of the read of that row are one rowId. BatchReads
// finds a batch's own events in its reads by these ids, so a read whose id strays would see a row
// as missing; these tests name each read kind, and fail for a new one that has no case here.
import assert from "node:assert/strict";
import type { NewEvent, StoredEvent } from "../events/catalogue.ts";
import type { Queryable } from "../src/db/connect.ts";
import { NOW, stream, WALLET } from "./helpers/decider.ts";
import { type Projection, type ReadKind, rowId, rowRead } from "../projections/projection.ts";
import { PROJECTIONS } from "../projections/mod.ts";
import { BatchReads, read } from "../src/ledger/reads.ts";
import * as callLogs from "../projections/call_logs.ts";
import * as dailyUsage from "../projections/daily_usage.ts";
import * as deliveryHistoryReads from "../projections/delivery_history_reads.ts";
import * as idempotentReplies from "../projections/idempotent_replies.ts";
import * as kv from "../projections/kv.ts";
import * as payments from "../projections/payments.ts";
import * as schedules from "../projections/schedules.ts";
import * as scopedKeys from "../projections/scoped_keys.ts";
import * as viewCalls from "../projections/view_calls.ts";
import * as walletSettings from "../projections/wallet_settings.ts";
import * as webhookHealth from "../projections/webhook_health.ts";
import * as webhooks from "../projections/webhooks.ts";
import * as creditMovements from "../events/credit_movements.ts";
import * as attachments from "../src/attachments/store.ts";
import * as scheduleClaims from "../src/schedules/claims.ts";
import * as outbox from "../src/webhooks/outbox.ts";
import * as tokenRequests from "../src/wallets/token_requests.ts";

const MODULES = [
  callLogs,
  dailyUsage,
  deliveryHistoryReads,
  idempotentReplies,
  kv,
  payments,
  schedules,
  scopedKeys,
  viewCalls,
  walletSettings,
  webhookHealth,
  webhooks,
  creditMovements,
  attachments,
  scheduleClaims,
  outbox,
  tokenRequests,
];

const LATER = "2027-04-01T00:00:00.000Z";
const HOOK = "wh_1";
const KEY_ID = "key_1";

const webhookConfig = {
  webhookId: HOOK,
  url: "https://example.com/hook",
  email: "box@example.com",
  headers: {},
  secret: "whsec_c2VjcmV0",
  createdAt: "2027-02-01T00:00:00.000Z",
};
const billed = (data: Record<string, unknown> = {}): NewEvent =>
  ({
    type: "CallBilled",
    data: {
      callId: "call_1",
      method: "GET",
      path: "/kv/b/k",
      endpoint: "kv",
      status: 200,
      cost: 1,
      balance: 9,
      ms: 3,
      ...data,
    },
  }) as NewEvent;
const idempotency = { key: "idem_1", fingerprint: "f", status: 200, contentType: "text/plain", body: "ok" };

/** One event of each kind a read model folds, named for the cases below. */
const EVENTS = Object.fromEntries(
  Object.entries({
    opened: { type: "WalletOpened", data: {} },
    granted: { type: "CreditsGranted", data: { amount: 10, balance: 10, reason: "welcome" } },
    purchased: {
      type: "CreditsPurchased",
      data: { amount: 100, balance: 110, tier: "small", paymentId: "pay_1" },
    },
    kvWritten: { type: "KvWritten", data: { bucket: "b", key: "k", value: "v", expiresAt: LATER } },
    billed: billed(),
    keyCall: billed({ keyId: KEY_ID }),
    tokenReplay: billed({ idempotency }),
    keyReplay: billed({ idempotency, keyId: KEY_ID }),
    viewCall: billed({ endpoint: "token", path: "/token/ledger", cost: 0, balance: 10 }),
    keyCreated: { type: "KeyCreated", data: { keyId: KEY_ID, name: "ci", hash: "h", scope: "read" } },
    settings: { type: "LowBalanceSettingsChanged", data: { threshold: 5, secret: "s" } },
    mailbox: { type: "WebhookCreated", data: webhookConfig },
    scheduled: {
      type: "WebhookCreated",
      data: { ...webhookConfig, schedule: { cron: "0 * * * *", timezone: "UTC", active: true } },
    },
    paused: { type: "WebhookPaused", data: { webhookId: HOOK, reason: "paused by owner" } },
    mail: {
      type: "EmailReceived",
      data: {
        deliveryId: "dlv_1",
        webhookId: HOOK,
        recipient: "box@example.com",
        messageId: "<m@example.com>",
        from: "a@example.com",
        subject: "hi",
        size: 100,
        attachments: [{ filename: "a.txt", contentType: "text/plain", size: 5, id: "att_1" }],
        truncated: false,
      },
    },
    attempted: {
      type: "DeliveryAttempted",
      data: {
        attemptId: "att_1",
        deliveryId: "dlv_1",
        webhookId: HOOK,
        kind: "email",
        messageId: "msg_1",
        attempt: 1,
        ok: true,
        status: 200,
        latencyMs: 5,
        cost: 0,
        balance: 10,
      },
    },
  } as Record<string, NewEvent>).map(([name, event]) => [name, stream([event])[0]]),
) as Record<string, StoredEvent>;

interface Case {
  read: ReadKind<any, any>;
  /** The key of the row (or wallet, or bucket) the event changes. */
  key: unknown;
  event: StoredEvent;
  /** The model whose rows the read is: its keyOf must be the read's id. */
  projection?: Projection<any>;
}

const webhookKey = { walletId: WALLET, webhookId: HOOK };

/** Reads the batch's own events change, each with an event and the key it changes. */
const CASES: Case[] = [
  {
    read: payments.paymentRead,
    key: { walletId: WALLET, paymentId: "pay_1" },
    event: EVENTS.purchased,
    projection: payments.paymentsProjection,
  },
  {
    read: walletSettings.walletSettingsRead,
    key: WALLET,
    event: EVENTS.settings,
    projection: walletSettings.walletSettingsProjection,
  },
  {
    read: scopedKeys.scopedKeyRead,
    key: { walletId: WALLET, keyId: KEY_ID },
    event: EVENTS.keyCreated,
    projection: scopedKeys.scopedKeysProjection,
  },
  {
    read: scopedKeys.scopedKeyRead,
    key: { walletId: WALLET, keyId: KEY_ID },
    event: EVENTS.keyCall,
    projection: scopedKeys.scopedKeysProjection,
  },
  {
    read: idempotentReplies.idempotentReplyRead,
    key: { walletId: WALLET, key: "idem_1" },
    event: EVENTS.tokenReplay,
    projection: idempotentReplies.idempotentRepliesProjection,
  },
  {
    read: idempotentReplies.idempotentReplyRead,
    key: { walletId: WALLET, keyId: KEY_ID, key: "idem_1" },
    event: EVENTS.keyReplay,
    projection: idempotentReplies.idempotentRepliesProjection,
  },
  {
    read: schedules.lockedScheduleRead,
    key: webhookKey,
    event: EVENTS.scheduled,
    projection: schedules.schedulesProjection,
  },
  {
    read: kv.kvEntryRead,
    key: { walletId: WALLET, bucket: "b", key: "k" },
    event: EVENTS.kvWritten,
    projection: kv.kvProjection,
  },
  {
    read: webhookHealth.webhookHealthRead,
    key: webhookKey,
    event: EVENTS.paused,
    projection: webhookHealth.webhookHealthProjection,
  },
  {
    read: viewCalls.viewCallsRead,
    key: WALLET,
    event: EVENTS.viewCall,
    projection: viewCalls.viewCallsProjection,
  },
  {
    read: webhooks.webhookRead,
    key: webhookKey,
    event: EVENTS.mailbox,
    projection: webhooks.webhooksProjection,
  },
  { read: scopedKeys.walletKeysRead, key: WALLET, event: EVENTS.keyCreated },
  { read: schedules.walletSchedulesRead, key: WALLET, event: EVENTS.scheduled },
  { read: webhookHealth.walletHealthRead, key: WALLET, event: EVENTS.paused },
  { read: webhooks.walletWebhooksRead, key: WALLET, event: EVENTS.mailbox },
  { read: dailyUsage.dailyUsageRead, key: WALLET, event: EVENTS.billed },
  { read: attachments.attachmentUsageRead, key: WALLET, event: EVENTS.mail },
  { read: creditMovements.creditMovementsRead, key: { walletId: WALLET }, event: EVENTS.granted },
  { read: kv.kvBucketChangesRead, key: { walletId: WALLET, bucket: "b" }, event: EVENTS.kvWritten },
];

/** Snapshots taken when the batch locks the wallets: no event of the batch changes them. */
const SNAPSHOTS: ReadKind<any, any>[] = [
  kv.kvPageRead,
  kv.kvBucketsRead,
  callLogs.newestCallLogsRead,
  deliveryHistoryReads.deliveryPageRead,
  deliveryHistoryReads.deliveryDetailRead,
  deliveryHistoryReads.recoverableRead,
  scheduleClaims.claimHeldRead,
  outbox.deliveryClaimRead,
  tokenRequests.lastTokenRequestRead,
];

function isReadKind(value: unknown): value is ReadKind<unknown, unknown> {
  const kind = value as Partial<ReadKind<unknown, unknown>> | null;
  return typeof kind?.name === "string" && typeof kind.id === "function" &&
    typeof kind.touches === "function" &&
    typeof kind.load === "function" && typeof kind.evolve === "function";
}

Deno.test("every read kind of the modules that define them has a case here", () => {
  const covered = new Set([...CASES.map((c) => c.read), ...SNAPSHOTS]);
  const found = MODULES.flatMap((module) => Object.values(module).filter(isReadKind));
  assert.deepEqual(found.filter((kind) => !covered.has(kind)).map((kind) => kind.name), []);
  assert.equal(new Set(found).size, covered.size);
});

Deno.test("a read's id is the id its events touch, and a row read's is its model's keyOf", () => {
  for (const { read, key, event, projection } of CASES) {
    const id = read.id(key);
    assert.deepEqual(read.touches(event), [id], `${read.name} touched by ${event.type}`);
    if (projection) assert.equal(projection.keyOf(event), id, `${projection.table} keyOf ${event.type}`);
  }
});

Deno.test("a snapshot read is touched by no event", () => {
  for (const read of SNAPSHOTS) {
    for (const event of Object.values(EVENTS)) assert.deepEqual(read.touches(event), [], read.name);
  }
});

Deno.test("each model files the row its fold makes under the row's own id", () => {
  for (const projection of PROJECTIONS) {
    let made = 0;
    for (const event of Object.values(EVENTS)) {
      const id = projection.keyOf(event);
      const row = projection.evolve(undefined, event);
      if (row === undefined) continue;
      assert.notEqual(id, null, `${projection.table} makes a row of ${event.type} without a key`);
      assert.equal(rowId(projection.keyColumns, row), id, `${projection.table} row of ${event.type}`);
      assert.deepEqual(
        projection.keyColumns.map((c) => row[c]),
        projection.keyColumns.map((c) => (projection.keyRow(event) as Record<string, unknown>)[c]),
      );
      made++;
    }
    assert.ok(made > 0, `no sample event makes a ${projection.table} row`);
  }
});

Deno.test("rowId: one column is its value, more are a JSON array with undefined as null", () => {
  assert.equal(rowId(["wallet_id"], { wallet_id: "w1", other: 1 }), "w1");
  assert.equal(rowId(["a", "b"], { b: 2, a: "x" }), '["x",2]');
  assert.equal(rowId(["a", "b"], { a: "x" }), '["x",null]');
});

/** A read of KV rows whose key names the row's columns the wrong way round. */
const strayRead = rowRead<{ walletId: string; bucket: string; key: string }, kv.KvRow>(kv.kvProjection, {
  name: "stray kv entry",
  keyRow: ({ walletId, bucket, key }) => ({ wallet_id: walletId, bucket: key, key: bucket }),
  load: () => Promise.resolve([kv.kvProjection.evolve(undefined, EVENTS.kvWritten)!]),
});

Deno.test("a read whose id strays from its rows fails its batch instead of reading as missing", async () => {
  const key = { walletId: WALLET, bucket: "b", key: "k" };
  assert.notEqual(strayRead.id(key), kv.kvProjection.keyOf(EVENTS.kvWritten));
  const reads = new BatchReads([{ entry: read(strayRead, key) }]);
  await assert.rejects(reads.load({} as Queryable, NOW), /Read "stray kv entry" loaded a value under id/);
});

Deno.test("a read whose loader agrees with its ids loads its rows", async () => {
  const good = rowRead<{ walletId: string; bucket: string; key: string }, kv.KvRow>(kv.kvProjection, {
    name: "kv entry (test)",
    keyRow: ({ walletId, bucket, key }) => ({ wallet_id: walletId, bucket, key }),
    load: () => Promise.resolve([kv.kvProjection.evolve(undefined, EVENTS.kvWritten)!]),
  });
  const reads = { entry: read(good, { walletId: WALLET, bucket: "b", key: "k" }) };
  const batch = new BatchReads([reads]);
  await batch.load({} as Queryable, NOW);
  assert.equal(batch.valuesOf(reads).entry?.value, "v");
});
