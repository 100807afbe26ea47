// Streaming replay: a log of many interleaved wallets, read in pages that split wallets, rebuilds
// exactly what the inline path built, through both writers (COPY on PostgreSQL, jsonb batches
// everywhere); a tampered projection is still caught, with exact counts and the row named.
import assert from "node:assert/strict";
import { type InProcessService, inProcessService } from "./helpers/in_process.ts";
import { replayProjections, type ReplayReport } from "../src/tasks/replay.ts";
import { walletFold } from "../src/tasks/replay_fold.ts";
import { kvProjection } from "../projections/kv.ts";
import { callLogsProjection } from "../projections/call_logs.ts";
import type { Projection } from "../projections/projection.ts";
import type { StoredEvent } from "../events/catalogue.ts";

const postgres = !!Deno.env.get("DATABASE_URL");
/** The writers to check: COPY needs PostgreSQL and a connection per table. */
const WRITERS = postgres ? [false, true] : [false];

/** Wallets doing a bit of everything, their calls interleaved so their events mix in the log. */
async function busyLog(svc: InProcessService, wallets: number) {
  const tokens = await Promise.all(Array.from({ length: wallets }, () => svc.newToken()));
  const ok = async (method: string, path: string, token: string, init: Record<string, any> = {}) => {
    const res = await svc.request(method, path, { token, ...init });
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
  };
  for (let round = 0; round < 3; round++) {
    await Promise.all(tokens.map(async (token, w) => {
      await ok("POST", `/kv/b/k${round}`, token, {
        body: `tab\there, back\\slash\nline ünïcödé ${"é".repeat(70)}`,
      });
      await ok("GET", `/kv/b/k${round}`, token);
      if (w % 3 === 0) await ok("DELETE", `/kv/b/k${round}`, token);
      await ok("POST", `/kv/i/k${round}`, token, {
        body: "once",
        headers: { "idempotency-key": `key-${round}` },
      });
    }));
  }
  await Promise.all(tokens.map(async (token, w) => {
    const hook = {
      url: "https://hooks.example.com/in",
      headers: { "X-Tag": `w${w}` },
      options: { channel: "ops" },
    };
    await ok("POST", "/webhook", token, { body: JSON.stringify({ ...hook, webhookId: "mail" }) });
    await ok("POST", "/webhook", token, {
      body: JSON.stringify({
        url: hook.url,
        webhookId: "cron",
        schedule: { cron: "0 9 * * *", timezone: "UTC" },
      }),
    });
    if (w % 2 === 0) await ok("DELETE", "/webhook/mail", token);
    await ok("PUT", "/token/settings", token, {
      body: JSON.stringify({
        low_balance_threshold: 5,
        low_balance_webhook: hook,
        low_balance_email: "a@example.com",
      }),
    });
    await ok("GET", "/token/logs?n=3", token);
    await ok("GET", "/token/usage?days=2", token);
    await ok("GET", "/token/ledger?limit=2", token);
  }));
}

function differences(report: ReplayReport) {
  return Object.fromEntries(report.tables.map((t) => [t.table, [t.onlyLive, t.onlyReplayed]]));
}

Deno.test("replay of a multi-wallet log rebuilds every projection exactly", async (t) => {
  const svc = await inProcessService();
  try {
    await busyLog(svc, 12);
    const [{ events }] = await svc.db.sql`select count(*)::int as events from events`;
    for (const copy of WRITERS) {
      await t.step(`${copy ? "COPY" : "jsonb"} writer, pages of 7 events`, async () => {
        const report = await replayProjections(svc.db.sql, {
          copy,
          pageSize: 7,
          keep: true,
          keys: svc.secrets.keys,
        });
        assert.equal(report.events, events);
        for (const table of report.tables) {
          assert.deepEqual(
            [table.table, table.onlyLive, table.onlyReplayed],
            [table.table, 0, 0],
            table.samples.join("; "),
          );
          const [{ live }] = await svc.db.sql.unsafe(
            `select count(*)::int as live from public.${table.table}`,
          );
          assert.equal(table.rows, live, `${table.table}: as many rows as the live table`);
        }
        const rebuilt = (name: string) => report.tables.find((table) => table.table === name)!.rows;
        assert.ok(rebuilt("kv_entries") > 0 && rebuilt("webhooks") > 0 && rebuilt("schedules") > 0);
        assert.ok(rebuilt("wallet_settings") > 0 && rebuilt("idempotent_replies") > 0);
      });
    }
  } finally {
    await svc.close();
  }
});

Deno.test("a tampered projection is still caught, with exact counts and the row named", async (t) => {
  const svc = await inProcessService();
  try {
    await busyLog(svc, 4);
    const sql = svc.db.sql;
    const [kv] =
      await sql`select wallet_id, bucket, key from kv_entries order by wallet_id, bucket, key limit 1`;
    const [log] = await sql`select wallet_id, id from call_logs order by wallet_id, id limit 1`;
    await sql`update kv_entries set value = 'tampered'
      where wallet_id = ${kv.wallet_id} and bucket = ${kv.bucket} and key = ${kv.key}`;
    await sql`delete from call_logs where wallet_id = ${log.wallet_id} and id = ${log.id}`;
    await sql`insert into payments values (${kv.wallet_id}, 'pay_forged', '1', 1000000, now())`;
    for (const copy of WRITERS) {
      await t.step(`${copy ? "COPY" : "jsonb"} writer`, async () => {
        const report = await replayProjections(sql, { copy, pageSize: 5, keys: svc.secrets.keys });
        const found = differences(report);
        assert.deepEqual(found.kv_entries, [1, 1], "the changed value: one row on each side");
        assert.deepEqual(found.call_logs, [0, 1], "the deleted entry: replayed only");
        assert.deepEqual(found.payments, [1, 0], "the forged payment: live only");
        assert.deepEqual(found.wallets, [0, 0]);
        const samples = report.tables.flatMap((table) => table.samples);
        assert.ok(samples.includes(`replayed only: ${log.wallet_id}/${log.id}`), samples.join("; "));
        assert.ok(samples.includes(`live only: ${kv.wallet_id}/pay_forged`), samples.join("; "));
      });
    }
  } finally {
    await svc.close();
  }
});

function stored(walletId: string, version: number, type: string, data: unknown): StoredEvent {
  return {
    walletId,
    version,
    position: 0,
    type,
    data,
    recordedAt: new Date("2030-01-01T00:00:00Z"),
  } as StoredEvent;
}

Deno.test("the wallet-by-wallet fold: rows leave with the wallet, call logs stream, keys stay per wallet", () => {
  const rows: [string, Record<string, unknown>][] = [];
  const fold = walletFold(
    [kvProjection, callLogsProjection],
    (i, row) => rows.push([i === 0 ? "kv" : "log", row]),
  );
  const write = (w: string, v: number, key: string) =>
    stored(w, v, "KvWritten", { bucket: "b", key, value: "v", expiresAt: "2030-02-01T00:00:00.000Z" });
  const billed = (w: string, v: number) =>
    stored(w, v, "CallBilled", {
      callId: `c${v}`,
      method: "GET",
      path: "/",
      endpoint: "kv",
      status: 200,
      cost: 1,
      balance: 1,
      ms: 1,
    });
  fold.apply(write("a", 1, "k1"));
  fold.apply(billed("a", 2));
  assert.deepEqual(rows.map(([kind]) => kind), ["log"], "a call log is final at once");
  fold.apply(stored("a", 3, "WalletDeactivated", { lastUsedAt: "2030-01-01T00:00:00.000Z" }));
  fold.apply(write("b", 1, "k2"));
  fold.apply(write("b", 2, "k2"));
  fold.finish();
  assert.deepEqual(rows.map(([kind, row]) => `${kind}:${row.wallet_id}`), ["log:a", "kv:b"]);

  const crossing: Projection<any> = {
    ...kvProjection,
    evolve: (_row, event) => ({ wallet_id: `${event.walletId}-other` }),
  };
  const broken = walletFold([crossing], () => {});
  broken.apply(write("a", 1, "k"));
  assert.throws(() => broken.finish(), /every read model must be keyed per wallet/);
});
