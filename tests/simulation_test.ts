// A seeded simulation (TigerBeetle's way of testing): random sequences of calls of several wallets
// at once (KV, webhooks, payments, emails, scoped keys, scheduled runs, the clock moving, deactivation) run
// through the real service and through an in-memory model of the CONTRACT side by side. Every
// answer must agree, and so must the final state; then the audit and the replay must be clean.
// CI runs a fixed set of seeds; `SIM_SEEDS=n` runs n more, `SIM_SEED=s` replays one seed.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { MAIL_DOMAIN, Simulation } from "./helpers/sim/driver.ts";
import { TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { auditLedger } from "../src/tasks/audit.ts";
import { replayProjections } from "../src/tasks/replay.ts";

const WALLETS = 4;
const STEPS = 40;
const FIXED_SEEDS = [11, 22, 33, 44, 55, 66];

function seeds(): number[] {
  const one = Deno.env.get("SIM_SEED");
  if (one) return [Number(one)];
  const more = Number(Deno.env.get("SIM_SEEDS") ?? 0);
  return [...FIXED_SEEDS, ...Array.from({ length: more }, (_, i) => 1000 + i)];
}

async function finalState(sim: Simulation) {
  await sim.compareBalances("at the end");
  const sql = sim.svc.db.sql;
  const now = sim.svc.clock.now();
  for (const w of sim.wallets) {
    const kv = await sql<{ bucket: string; key: string; value: string }[]>`
      select bucket, key, value from kv_entries where wallet_id = ${w.hash} and expires_at > ${now} order by key`;
    const live = [...w.kv.keys()].sort().flatMap((k) => {
      const value = w.liveValue(k, now.getTime());
      return value === undefined || w.deactivated ? [] : [`${k}=${value}`];
    });
    // Both sides sorted alike: the table orders keys by code point, JavaScript by UTF-16 unit.
    assert.deepEqual(kv.map((r) => `${r.bucket}/${r.key}=${r.value}`).sort(), live.sort(), "live KV entries");
    const hooks = await sql<{ webhook_id: string }[]>`
      select webhook_id from webhooks where wallet_id = ${w.hash} order by webhook_id`;
    assert.deepEqual(hooks.map((r) => r.webhook_id), w.deactivated ? [] : [...w.webhooks.keys()].sort());
    const keys = await sql<{ key_id: string; spent: number }[]>`
      select key_id, spent from scoped_keys where wallet_id = ${w.hash} order by key_id`;
    const modelKeys = w.deactivated ? [] : w.keys.map((k) => `${k.id}=${k.spent}`).sort();
    assert.deepEqual(keys.map((r) => `${r.key_id}=${r.spent}`).sort(), modelKeys, "each key's spend");
    const [queued] = await sql<{ n: number; held: number }[]>`
      select count(*)::int as n, count(*) filter (where held)::int as held
      from webhook_deliveries where wallet_id = ${w.hash}`;
    assert.equal(queued.n, w.queued, "deliveries queued");
    assert.equal(queued.held, w.held(), "deliveries waiting for a paused webhook");
    const [history] = await sql<{ n: number }[]>`
      select count(*)::int as n from delivery_history where wallet_id = ${w.hash}`;
    assert.equal(history.n, w.deactivated ? 0 : w.queued, "deliveries in the history");
  }
  assert.deepEqual((await auditLedger(sql)).mismatches, []);
  const replay = await replayProjections(sql, { keys: sim.svc.secrets.keys });
  for (const table of replay.tables) {
    assert.deepEqual(
      [table.table, table.onlyLive, table.onlyReplayed],
      [table.table, 0, 0],
      table.samples.join("\n"),
    );
  }
}

for (const seed of seeds()) {
  Deno.test({
    name: `simulation: seed ${seed} agrees with the model`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const svc = await inProcessService({
        MAIL_DOMAIN,
        PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET,
        UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
      });
      const sim = new Simulation(svc, seed);
      try {
        await sim.open(WALLETS);
        for (let step = 0; step < STEPS; step++) {
          await sim.round(step);
          await sim.between(step, STEPS);
        }
        await finalState(sim);
      } catch (error) {
        const replay = `replay it with SIM_SEED=${seed} deno test --allow-all tests/simulation_test.ts`;
        throw new Error(`Simulation seed ${seed} failed (${replay})\n${sim.trace.slice(-8).join("\n")}`, {
          cause: error,
        });
      } finally {
        await svc.close();
      }
    },
  });
}
