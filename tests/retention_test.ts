// Retention by time partitions: expired call logs and attachments leave by whole partitions,
// live rows and the service's own sample file stay, and the newest logs read right across
// partition boundaries. Times are fixed in 2030 so partition bounds are known.
import assert from "node:assert/strict";
import type { Sql } from "../src/db/connect.ts";
import { migrate } from "../src/db/migrate.ts";
import { listPartitions } from "../src/db/partitions.ts";
import { preparePartitions, sweepOnce } from "../src/sweeper.ts";
import { callLogsProjection, LOG_RETENTION_MS, newestCallLogs } from "../projections/call_logs.ts";
import { writeRows } from "../projections/projection_sql.ts";
import {
  ensureServiceFile,
  readAttachment,
  SERVICE_OWNER,
  storeAttachments,
} from "../src/attachments/store.ts";
import { SAMPLE_ATTACHMENT } from "../src/attachments/sample_pdf.ts";
import type { StoredEvent } from "../events/catalogue.ts";
import { withFreshDatabase } from "./helpers/database.ts";
import { inProcessService } from "./helpers/in_process.ts";

const DAY = 24 * 3600 * 1000;
const at = (iso: string) => new Date(iso);

let version = 0;
/** A billed call's log row, written by the projection's own batch insert. */
async function logCall(sql: Sql, walletId: string, callId: string, recordedAt: Date) {
  const event = {
    type: "CallBilled",
    walletId,
    version: ++version,
    position: version,
    recordedAt,
    data: {
      callId,
      method: "GET",
      path: `/kv/b/${callId}`,
      endpoint: "kv",
      status: 200,
      cost: 1,
      balance: 1,
      ms: 1,
    },
  } as StoredEvent;
  await sql.begin((tx) =>
    writeRows(tx, callLogsProjection, {
      removedWallets: [],
      deleted: [],
      written: [callLogsProjection.evolve(undefined, event)!],
    })
  );
}

async function partitionOf(sql: Sql, table: string, id: string): Promise<string | undefined> {
  const [row] = await sql.unsafe(`select tableoid::regclass::text as name from ${table} where id = $1`, [id]);
  return row?.name;
}

const newestIds = async (sql: Sql, walletId: string, now: Date) =>
  (await newestCallLogs(sql, walletId, { limit: 10, now })).map((row) => row.id);

Deno.test("retention drops whole expired partitions and keeps what is live", async (t) => {
  await withFreshDatabase(async (sql) => {
    await migrate(sql);
    const start = at("2030-01-01T01:00:00Z");
    await preparePartitions(sql, start);
    // Call logs expire 7 days after the call: 2030-01-08 02:00, 13:00 and 2030-01-09 05:00.
    await logCall(sql, "w1", "early", at("2030-01-01T02:00:00Z"));
    await logCall(sql, "w1", "later", at("2030-01-01T13:00:00Z"));
    await logCall(sql, "w1", "latest", at("2030-01-02T05:00:00Z"));
    const file = { walletId: "w1", id: "file", filename: "a.txt", contentType: "text/plain" };
    await sql.begin((tx) =>
      storeAttachments.apply(tx, [{
        type: "storeAttachment",
        file: { ...file, content: new Uint8Array([1, 2, 3]) },
      }], start)
    );
    await ensureServiceFile(sql, SAMPLE_ATTACHMENT, start);

    await t.step("partitions exist from now to beyond the furthest new expiry", async () => {
      const dated = (await listPartitions(sql, "call_logs")).filter((p) => p.from !== null);
      assert.equal(dated[0].from!.toISOString(), "2030-01-01T00:00:00.000Z");
      assert.ok(dated[dated.length - 1].to!.getTime() >= start.getTime() + 8 * DAY);
      assert.equal(await partitionOf(sql, "call_logs", "early"), "call_logs_p20300108t0000");
      assert.equal(await partitionOf(sql, "call_logs", "later"), "call_logs_p20300108t1200");
    });

    await t.step("an expired row waits for its partition to expire whole, unseen", async () => {
      const now = at("2030-01-08T11:59:00Z");
      const swept = await sweepOnce(sql, now);
      assert.ok(!swept.callLogs.dropped.includes("call_logs_p20300108t0000"));
      assert.equal(await partitionOf(sql, "call_logs", "early"), "call_logs_p20300108t0000");
      assert.deepEqual(await newestIds(sql, "w1", now), ["latest", "later"]);
      assert.equal(
        await readAttachment(sql, { walletId: "w1", id: "file", now }),
        undefined,
        "expired at 01:00",
      );
    });

    await t.step("a partition whose every row expired is dropped; live rows stay", async () => {
      const now = at("2030-01-08T12:30:00Z");
      const swept = await sweepOnce(sql, now);
      assert.ok(swept.callLogs.dropped.includes("call_logs_p20300108t0000"));
      assert.ok(swept.attachments.dropped.includes("attachments_p20300108t0000"));
      assert.equal(swept.callLogs.strays, 0);
      assert.equal(await partitionOf(sql, "call_logs", "early"), undefined, "physically gone");
      assert.equal(await partitionOf(sql, "attachments", "file"), undefined, "physically gone");
      assert.deepEqual(await newestIds(sql, "w1", now), ["latest", "later"]);
      const names = (await listPartitions(sql, "call_logs")).map((p) => p.name);
      assert.ok(names.every((name) => name === "call_logs_default" || name >= "call_logs_p20300108t1200"));
    });

    await t.step("the service's sample file outlives every sweep", async () => {
      const farFuture = at("2040-06-01T00:00:00Z");
      await sweepOnce(sql, farFuture);
      const sample = await readAttachment(sql, {
        walletId: SERVICE_OWNER,
        id: SAMPLE_ATTACHMENT.id,
        now: farFuture,
      });
      assert.deepEqual(sample?.content, SAMPLE_ATTACHMENT.content);
      assert.equal(await partitionOf(sql, "attachments", SAMPLE_ATTACHMENT.id), "attachments_forever");
      assert.equal(await newestIds(sql, "w1", farFuture).then((ids) => ids.length), 0);
      await ensureServiceFile(sql, SAMPLE_ATTACHMENT, farFuture);
      const [{ count }] = await sql`select count(*)::int as count from attachments`;
      assert.equal(count, 1, "refreshed in place, not duplicated");
    });
  });
});

Deno.test("rows written before their partition exists move into it, expired strays are deleted", async () => {
  await withFreshDatabase(async (sql) => {
    await migrate(sql);
    // Before any partition: both rows land in the catch-all partition.
    await logCall(sql, "w2", "stray", at("2029-12-20T00:00:00Z"));
    await logCall(sql, "w2", "ahead", at("2030-01-13T00:00:00Z"));
    assert.equal(await partitionOf(sql, "call_logs", "ahead"), "call_logs_default");
    const swept = await sweepOnce(sql, at("2030-01-15T00:00:00Z"));
    assert.equal(swept.callLogs.strays, 1, "the expired one, outside every partition");
    assert.equal(await partitionOf(sql, "call_logs", "stray"), undefined);
    assert.equal(await partitionOf(sql, "call_logs", "ahead"), "call_logs_p20300120t0000");
    assert.deepEqual(await newestIds(sql, "w2", at("2030-01-15T00:00:00Z")), ["ahead"]);
  });
});

Deno.test("migration 006 keeps the call logs and attachments it converts", async () => {
  await withFreshDatabase(async (sql) => {
    // The schema as migrations 001 to 005 left it, with rows in it.
    await sql`create table schema_migrations (version text primary key, applied_at timestamptz not null default now())`;
    for (
      const file of ["001_ledger", "002_webhooks", "003_payments", "004_wallet_settings", "005_schedules"]
    ) {
      await sql.unsafe(await Deno.readTextFile(new URL(`../src/db/migrations/${file}.sql`, import.meta.url)));
      await sql`insert into schema_migrations (version) values (${`${file}.sql`})`;
    }
    const now = new Date();
    // The row as the service of that schema wrote it: today's call-log model has columns added since.
    await sql`insert into call_logs (wallet_id, id, version, method, path, endpoint, status_code, error, cost,
      balance, response_time_ms, at, expires_at) values ('w3', 'old-call', 1, 'GET', '/kv/b/old-call', 'kv', 200,
      null, 1, 1, 1, ${now}, ${new Date(now.getTime() + LOG_RETENTION_MS)})`;
    await sql`insert into attachments values (${SERVICE_OWNER}, ${SAMPLE_ATTACHMENT.id}, 'x.pdf', 'application/pdf',
      1, ${new Uint8Array([7])}, ${now}, '9999-12-31T00:00:00Z')`;

    // 006 and every migration after it apply on that schema.
    assert.equal((await migrate(sql))[0], "006_partitions.sql");
    assert.deepEqual(await newestIds(sql, "w3", now), ["old-call"]);
    await preparePartitions(sql, now);
    assert.match((await partitionOf(sql, "call_logs", "old-call"))!, /^call_logs_p\d{8}t\d{4}$/);
    await ensureServiceFile(sql, SAMPLE_ATTACHMENT, now);
    const sample = await readAttachment(sql, { walletId: SERVICE_OWNER, id: SAMPLE_ATTACHMENT.id, now });
    assert.deepEqual(sample?.content, SAMPLE_ATTACHMENT.content, "the refresh found the converted row");
    assert.equal(await partitionOf(sql, "attachments", SAMPLE_ATTACHMENT.id), "attachments_forever");
  });
});

Deno.test("the newest call logs read right across partition boundaries, through the API", async () => {
  const svc = await inProcessService();
  try {
    await preparePartitions(svc.db.sql, svc.clock.now());
    const token = await svc.newToken();
    // Calls 13 hours apart: their logs fall in different 12-hour partitions.
    for (const key of ["k1", "k2", "k3"]) {
      assert.equal((await svc.request("POST", `/kv/b/${key}`, { token, body: "v" })).status, 200);
      svc.clock.advance(13 * 3600 * 1000);
    }
    const kvPaths = async () => {
      const res = await svc.request("GET", "/token/logs?n=20&type=kv", { token });
      assert.equal(res.status, 200, res.text);
      return JSON.parse(res.text).logs.map((entry: { path: string }) => entry.path);
    };
    assert.deepEqual(await kvPaths(), ["/kv/b/k3", "/kv/b/k2", "/kv/b/k1"]);
    const [{ partitions }] = await svc.db.sql`
      select count(distinct tableoid)::int as partitions from call_logs where path like '/kv/b/k%'`;
    assert.equal(partitions, 3);

    // Past the end of k1's partition, before k2 expires: k1's partition goes, k2 and k3 stay.
    const [{ expires }] = await svc.db
      .sql`select expires_at as expires from call_logs where path = '/kv/b/k1'`;
    const k1PartitionEnd = Math.ceil(expires.getTime() / (12 * 3600 * 1000)) * 12 * 3600 * 1000;
    svc.clock.advance(k1PartitionEnd + 60_000 - svc.clock.now().getTime());
    const swept = await sweepOnce(svc.db.sql, svc.clock.now());
    assert.ok(swept.callLogs.dropped.length > 0);
    assert.deepEqual(await kvPaths(), ["/kv/b/k3", "/kv/b/k2"]);
  } finally {
    await svc.close();
  }
});

Deno.test({
  name: "a drop that cannot get its lock waits for the next sweep; the other sweeps still run",
  // Holding a lock while sweeping needs two connections: PostgreSQL only.
  ignore: !Deno.env.get("DATABASE_URL"),
  async fn() {
    await withFreshDatabase(async (sql) => {
      await migrate(sql);
      await preparePartitions(sql, at("2030-01-01T01:00:00Z"));
      await logCall(sql, "w4", "old", at("2030-01-01T02:00:00Z"));
      await sql`insert into kv_entries (wallet_id, bucket, key, value, expires_at, version)
        values ('w4', 'b', 'gone', 'v', '2030-01-02T00:00:00Z', 1)`;
      const now = at("2030-01-08T12:30:00Z");
      const reader = await sql.reserve();
      try {
        // A long reader of the call logs: dropping a partition must wait for it.
        await reader`begin`;
        await reader`select count(*) from call_logs`;
        await assert.rejects(
          sweepOnce(sql, now),
          /Sweep failed in 1 of 5 steps: Partition upkeep of call_logs failed: .*drop: .*lock timeout/,
        );
        assert.equal(await partitionOf(sql, "call_logs", "old"), "call_logs_p20300108t0000");
        const [{ kv }] = await sql`select count(*)::int as kv from kv_entries`;
        assert.equal(kv, 0, "the KV sweep ran all the same");
      } finally {
        await reader`rollback`;
        reader.release();
      }
      const swept = await sweepOnce(sql, now);
      assert.ok(swept.callLogs.dropped.includes("call_logs_p20300108t0000"));
      assert.equal(await partitionOf(sql, "call_logs", "old"), undefined);
    });
  },
});
