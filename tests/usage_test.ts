// Where the credits went, through real HTTP: the ledger paged back to the wallet's first day, usage
// per day and type as JSON and CSV, both free (also for an empty wallet), and their per-wallet rate
// limit, which holds across service instances; replay rebuilds the new read models exactly.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { embedded, runTask, type Service, startService } from "./helpers/service.ts";
import { inProcessService } from "./helpers/in_process.ts";
import { newEvent } from "../events/catalogue.ts";
import { sha256Hex } from "../src/ids.ts";

type Client = ReturnType<typeof walletClient>;

async function allEntries(client: Client, limit: number): Promise<any[]> {
  const entries: any[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 50; pages++) {
    const res = await client.get(`/token/ledger?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`);
    assert.equal(res.status, 200, res.text);
    const body = res.json();
    entries.push(...body.entries);
    cursor = body.nextCursor;
    if (cursor === null) return entries;
  }
  throw new Error("The ledger did not end within 50 pages");
}

async function replayOf(service: Service) {
  if (!embedded) return await runTask(service, "replay");
  await service.stop();
  try {
    return await runTask(service, "replay");
  } finally {
    await service.start();
  }
}

Deno.test("the ledger and usage views", async (t) => {
  const svc = await startService();
  try {
    const client = walletClient(svc, await newToken(svc));

    await t.step("a new wallet's ledger is its welcome grant, and looking costs nothing", async () => {
      const res = await client.get("/token/ledger");
      assert.equal(res.status, 200);
      assert.deepEqual([res.cost, res.balance], [0, 100]);
      const { entries, nextCursor } = res.json();
      assert.equal(nextCursor, null);
      assert.equal(entries.length, 1);
      assert.deepEqual(
        [entries[0].type, entries[0].amount, entries[0].balance, entries[0].ref, entries[0].endpoint],
        ["grant", 100, 100, "welcome", null],
      );
    });

    await t.step("each charged call is a debit whose ref is its call-log id", async () => {
      await client.post("/kv/b/k", "v"); // 99
      await client.get("/kv/b/missing"); // 98, 404
      await client.get("/recharge"); // free: no movement
      const { entries } = (await client.get("/token/ledger?limit=2")).json();
      assert.deepEqual(entries.map((e: any) => [e.type, e.amount, e.balance, e.endpoint]), [
        ["debit", -1, 98, "kv"],
        ["debit", -1, 99, "kv"],
      ]);
      const logs = (await client.get("/token/logs?n=2&type=kv")).json().logs; // 96
      assert.deepEqual(entries.map((e: any) => e.ref), logs.map((l: any) => l.id));
      assert.deepEqual(entries.map((e: any) => e.at), logs.map((l: any) => l.timestamp));
    });

    await t.step("paging with the cursor walks back to the first day, each entry once", async () => {
      for (let i = 0; i < 7; i++) await client.get(`/kv/b/k${i}`); // 89
      const whole = (await client.get("/token/ledger?limit=100")).json();
      assert.equal(whole.nextCursor, null);
      assert.equal(whole.entries.length, 11); // the grant, 2 KV calls, the log read, 7 KV calls
      const paged = await allEntries(client, 3);
      assert.deepEqual(paged, whole.entries);
      assert.equal(paged.at(-1).type, "grant");
      // Each balance follows from the one before it.
      for (let i = 0; i < paged.length - 1; i++) {
        assert.equal(paged[i].balance, paged[i + 1].balance + paged[i].amount);
      }
      assert.equal(paged[0].balance, (await client.get("/token/ledger?limit=1")).balance);
    });

    await t.step("usage per UTC day and type, as JSON and as CSV", async () => {
      const res = await client.get("/token/usage");
      assert.deepEqual([res.status, res.cost], [200, 0]);
      const { days } = res.json();
      assert.equal(days.length, 30);
      const today = new Date().toISOString().slice(0, 10);
      assert.equal(days.at(-1).date, today);
      assert.ok(days.slice(0, -1).every((d: any) => Object.keys(d.byType).length === 0));
      const { kv, token } = days.at(-1).byType;
      assert.deepEqual(kv, { calls: 9, credits: 9, errors: 8 }); // the POST, then 8 misses
      assert.equal(token.credits, 2); // the log read; the views and /recharge are free
      assert.equal(token.errors, 0);

      const csv = await client.get("/token/usage?days=2", { accept: "text/csv" });
      assert.equal(csv.headers.get("content-type"), "text/csv; charset=utf-8");
      const lines = csv.text.trimEnd().split("\r\n");
      assert.equal(lines[0], "date,type,calls,credits,errors");
      assert.ok(lines.includes(`${today},kv,9,9,8`), csv.text);
      assert.equal((await client.get("/token/usage?days=2&format=csv")).text.split("\r\n")[1], lines[1]);
      assert.equal(
        (await client.get("/token/usage?days=1&format=json", { accept: "text/csv" })).json().days.length,
        1,
      );
    });

    await t.step("bad parameters are 400, free", async () => {
      const bad = [
        "/token/ledger?limit=0",
        "/token/ledger?limit=101",
        "/token/ledger?limit=x",
        "/token/ledger?cursor=0",
        "/token/ledger?cursor=abc",
        "/token/usage?days=0",
        "/token/usage?days=91",
        "/token/usage?format=xml",
      ];
      for (const path of bad) {
        const res = await client.get(path);
        assert.deepEqual([res.status, res.cost], [400, 0], path);
        assert.match(res.text, /^Invalid (limit|cursor|days|format): /);
      }
      assert.equal((await call(svc, "GET", "/token/usage")).status, 401);
      assert.equal((await call(svc, "GET", "/token/ledger", { token: "x".repeat(32) })).status, 401);
    });

    await t.step("an empty wallet can still see where its credits went", async () => {
      let balance = (await client.get("/token/ledger?limit=1")).balance!;
      while (balance > 0) balance = (await client.get("/kv/b/none")).balance!;
      const res = await client.get("/token/ledger?limit=1");
      assert.deepEqual([res.status, res.cost, res.balance], [200, 0, 0]);
      assert.deepEqual(res.json().entries[0].balance, 0);
      assert.equal((await client.get("/token/usage?days=1")).status, 200);
    });

    await t.step("replay rebuilds the usage and rate-limit read models exactly", async () => {
      const replay = await replayOf(svc);
      assert.equal(replay.code, 0, replay.stdout + replay.stderr);
      assert.match(replay.stdout, /daily_usage/);
      assert.match(replay.stdout, /view_calls/);
    });
  } finally {
    await svc.dispose();
  }
});

Deno.test("30 free views a minute per wallet, then 429 with Retry-After, across instances", async () => {
  const first = await startService();
  // Several instances share a database only on PostgreSQL; the embedded one belongs to one process.
  const second = embedded ? first : await startService({ sharedWith: first });
  try {
    const token = await newToken(first);
    const paths = Array.from(
      { length: 40 },
      (_, i) => i % 2 ? "/token/ledger?limit=1" : "/token/usage?days=1",
    );
    const answers = await Promise.all(
      paths.map((path, i) => call(i % 2 ? second : first, "GET", path, { token })),
    );
    const statuses = answers.map((a) => a.status);
    assert.equal(statuses.filter((s) => s === 200).length, 30, statuses.join(" "));
    const refused = answers.filter((a) => a.status === 429);
    assert.equal(refused.length, 10);
    for (const answer of refused) {
      assert.equal(answer.text, "Too Many Requests");
      assert.equal(answer.cost, 0);
      assert.equal(answer.balance, 100);
      const wait = Number(answer.headers.get("retry-after"));
      assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
    }
    // Other calls are not limited, and the refusals are in the call log like any call.
    const logs = await call(first, "GET", "/token/logs?n=40&type=token&views=include", { token });
    assert.equal(logs.status, 200);
    const entries = logs.json().logs.filter((l: any) =>
      l.path !== "/token/logs?n=40&type=token&views=include"
    );
    assert.equal(entries.filter((l: any) => l.status_code === 429).length, 10);
    assert.ok(entries.every((l: any) => l.cost === 0));
    // Calls that shared a transaction were appended to the limit's read model as replay folds them.
    const replay = await replayOf(first);
    assert.equal(replay.code, 0, replay.stdout + replay.stderr);
  } finally {
    if (second !== first) await second.dispose();
    await first.dispose();
  }
});

Deno.test("the migration's backfill of usage from the log equals what the ledger folds inline", async () => {
  const svc = await inProcessService();
  try {
    const token = await svc.newToken();
    const walletId = await sha256Hex(token);
    await svc.request("POST", "/kv/b/k", { token, body: "v" });
    await svc.request("GET", "/kv/b/missing", { token });
    await svc.request("GET", "/token/usage", { token });
    await svc.ledger.appendUnbilled({
      walletId,
      decide: ({ wallet }) => ({
        outcome: undefined,
        events: [
          newEvent("CreditsPurchased", {
            amount: 10,
            balance: wallet!.balance + 10,
            tier: "1",
            paymentId: "evt_1",
          }),
          newEvent("DeliveryAttempted", {
            attemptId: "a1",
            deliveryId: "d1",
            webhookId: "inbox",
            kind: "email",
            messageId: "<m>",
            attempt: 1,
            ok: false,
            latencyMs: 1,
            cost: 0,
            balance: wallet!.balance + 10,
          }),
        ],
      }),
    });
    const migration = await Deno.readTextFile(
      new URL("../src/db/migrations/010_daily_usage.sql", import.meta.url),
    );
    const backfill = migration.slice(migration.indexOf("\nselect wallet_id"), migration.lastIndexOf(";"));
    const columns = "wallet_id, day::text, type, calls::int, credits::bigint, errors::int";
    const inline = await svc.db.sql.unsafe(`select ${columns} from daily_usage order by 1, 2, 3`);
    const rebuilt = await svc.db.sql.unsafe(
      `select ${columns} from (${backfill}) as b(wallet_id, day, type, calls, credits, errors) order by 1, 2, 3`,
    );
    assert.deepEqual(rebuilt, inline);
    assert.deepEqual(inline.map((r) => r.type), ["kv", "payment", "token", "webhook-delivery"]);
  } finally {
    await svc.close();
  }
});
