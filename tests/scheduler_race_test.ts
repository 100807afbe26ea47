// Exactly once under contention, with a clock the test moves: several scheduler instances (each
// with its own connection pool and ledger on Postgres) race for the same due runs; a claim whose
// instance died is taken over when its lease runs out, and the late holder of a stale claim finds
// nothing to run.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { openDatabase, type Sql } from "../src/db/connect.ts";
import { createServiceLedger } from "../src/service_ledger.ts";
import { handleClaim, runDueSchedules, type SchedulerOptions } from "../src/schedules/scheduler.ts";
import { claimDueRuns } from "../src/schedules/claims.ts";
import { sha256Hex } from "../src/ids.ts";
import { auditLedger } from "../src/tasks/audit.ts";

const WALLETS = 5;
const SCHEDULES_PER_WALLET = 8;
const INSTANCES = 4;

Deno.test({
  name: "scheduler: racing instances fire each planned time once; a dead instance's claim is taken over",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const svc = await inProcessService();
    const pools: { close(): Promise<void> }[] = [];
    try {
      const setClock = (iso: string) => svc.clock.advance(Date.parse(iso) - svc.clock.now().getTime());
      setClock("2027-08-01T11:58:30.000Z");
      const hashes: string[] = [];
      for (let w = 0; w < WALLETS; w++) {
        const token = await svc.newToken();
        hashes.push(await sha256Hex(token));
        for (let i = 0; i < SCHEDULES_PER_WALLET; i++) {
          const created = await svc.request("POST", "/webhook", {
            token,
            body: JSON.stringify({
              webhookId: `job${i}`,
              url: "https://hooks.example.com/job",
              schedule: { cron: "* * * * *", timezone: "UTC" },
            }),
          });
          assert.equal(created.status, 200, created.text);
        }
      }

      // On Postgres every instance gets its own pool, as separate processes would; the embedded
      // database has one connection, which the instances share.
      const instances: SchedulerOptions[] = [];
      const url = Deno.env.get("DATABASE_POOLER_URL") ?? Deno.env.get("DATABASE_URL");
      const pooler = Deno.env.get("DATABASE_POOLER_URL") ? "transaction" : "none";
      for (let i = 0; i < INSTANCES; i++) {
        let sql: Sql = svc.db.sql;
        if (url) {
          const [{ name }] = await svc.db.sql<{ name: string }[]>`select current_database() as name`;
          const own = new URL(url);
          own.pathname = `/${name}`;
          const db = await openDatabase({
            databaseUrl: own.toString(),
            pooler,
            dataDir: "",
            maxConnections: 4,
          });
          pools.push(db);
          sql = db.sql;
        }
        instances.push({ sql, ledger: createServiceLedger(sql, svc.clock), clock: svc.clock, batchSize: 7 });
      }

      const minutes = ["2027-08-01T11:59:00.000Z", "2027-08-01T12:00:00.000Z", "2027-08-01T12:01:00.000Z"];
      for (const minute of minutes) {
        await t.step(
          `${INSTANCES} instances at ${minute}: ${WALLETS * SCHEDULES_PER_WALLET} runs, each once`,
          async () => {
            setClock(new Date(Date.parse(minute) + 200).toISOString());
            const passes = await Promise.all(instances.map((instance) => runDueSchedules(instance)));
            const fired = passes.reduce((sum, pass) => sum + pass.fired, 0);
            assert.equal(fired, WALLETS * SCHEDULES_PER_WALLET);
            assert.ok(passes.filter((pass) => pass.fired > 0).length > 1, "the instances shared the work");
            const [counts] = await svc.db.sql`
            select count(*)::int as events,
                   count(distinct (wallet_id, data->>'webhookId', data->>'plannedAt'))::int as planned
            from events where type = 'ScheduleFired' and data->>'plannedAt' = ${minute}`;
            assert.deepEqual([counts.events, counts.planned], [fired, fired]);
          },
        );
      }

      await t.step("every run charged 2 once; one outbox row per run; the audit adds up", async () => {
        const runs = minutes.length;
        const wallets = await svc.db.sql<{ balance: number }[]>`
          select balance from wallets where wallet_id = any(${hashes})`;
        for (const { balance } of wallets) {
          assert.equal(balance, 100 - SCHEDULES_PER_WALLET - 2 * runs * SCHEDULES_PER_WALLET);
        }
        const [outbox] = await svc.db.sql`
          select count(*)::int as rows, count(distinct (wallet_id, message_id))::int as messages
          from webhook_deliveries`;
        assert.deepEqual([outbox.rows, outbox.messages], [
          runs * WALLETS * SCHEDULES_PER_WALLET,
          outbox.rows,
        ]);
        assert.deepEqual((await auditLedger(svc.db.sql)).mismatches, []);
      });

      await t.step(
        "a claim of a dead instance blocks others until its lease runs out, then runs once",
        async () => {
          const [dead, alive] = instances;
          setClock("2027-08-01T12:02:00.300Z");
          const claims = await claimDueRuns(dead.sql, { now: svc.clock.now(), limit: 1000, leaseMs: 30_000 });
          assert.equal(claims.length, WALLETS * SCHEDULES_PER_WALLET);
          // The dead instance never runs them: nobody else may while the lease holds.
          assert.equal((await runDueSchedules(alive)).fired, 0);
          setClock("2027-08-01T12:02:31.000Z");
          const pass = await runDueSchedules(alive);
          assert.equal(pass.fired, WALLETS * SCHEDULES_PER_WALLET, "taken over, late but within 5 minutes");
          // The dead instance comes back and runs what it held: nothing happens.
          for (const claim of claims) assert.equal(await handleClaim(dead, claim, svc.clock.now()), "lost");
          const [counts] = await svc.db.sql`
          select count(*)::int as events from events
          where type = 'ScheduleFired' and data->>'plannedAt' = '2027-08-01T12:02:00.000Z'`;
          assert.equal(counts.events, WALLETS * SCHEDULES_PER_WALLET);
          const [left] = await svc.db.sql`select count(*)::int as n from schedule_claims`;
          assert.equal(left.n, 0, "no claim left behind");
        },
      );
      await t.step(
        "two holders of one planned time (a lease ran out mid-run): one run, one lost",
        async () => {
          const [slow, fast] = instances;
          setClock("2027-08-01T12:03:00.300Z");
          const stale = await claimDueRuns(slow.sql, { now: svc.clock.now(), limit: 1000, leaseMs: 1 });
          await new Promise((resolve) => setTimeout(resolve, 5));
          const fresh = await claimDueRuns(fast.sql, { now: svc.clock.now(), limit: 1000, leaseMs: 30_000 });
          assert.equal(fresh.length, stale.length, "every expired claim taken over");
          const outcomes = await Promise.all([
            ...stale.map((claim) => handleClaim(slow, claim, svc.clock.now())),
            ...fresh.map((claim) => handleClaim(fast, claim, svc.clock.now())),
          ]);
          assert.equal(outcomes.filter((o) => o === "fired").length, WALLETS * SCHEDULES_PER_WALLET);
          assert.equal(outcomes.filter((o) => o === "lost").length, WALLETS * SCHEDULES_PER_WALLET);
          const [counts] = await svc.db.sql`
          select count(*)::int as events from events
          where type = 'ScheduleFired' and data->>'plannedAt' = '2027-08-01T12:03:00.000Z'`;
          assert.equal(counts.events, WALLETS * SCHEDULES_PER_WALLET);
          assert.deepEqual((await auditLedger(svc.db.sql)).mismatches, []);
        },
      );
    } finally {
      for (const pool of pools) await pool.close();
      await svc.close();
    }
  },
});
