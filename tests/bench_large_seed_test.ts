// The bench's large-database seeder: what it copies in is what the service's own folds hold (the
// audit is clean, replay rebuilds every projection exactly) and its tokens open their wallets
// through the service. COPY from the client needs PostgreSQL: without DATABASE_URL it is skipped.
import assert from "node:assert/strict";
import { openDatabase } from "../src/db/connect.ts";
import { migrate } from "../src/db/migrate.ts";
import { auditLedger } from "../src/tasks/audit.ts";
import { replayProjections } from "../src/tasks/replay.ts";
import { checkScale, seededToken, seedLargeDatabase } from "../src/tasks/bench/large_seed.ts";
import { largeRatios, type LargeRound } from "../src/tasks/bench/large_database.ts";
import { BENCH_KEY_PATH, POST_VALUE_BYTES, type RunResult } from "../src/tasks/bench/load.ts";
import { freshDatabase, openOptionsOf, startService } from "./helpers/service.ts";

const postgres = !!Deno.env.get("DATABASE_URL");
/** 20 wallets of 20 events: 3 of their own, 3 KV writes (2 events each), 11 reads. */
const SCALE = { wallets: 20, kvEntries: 60, events: 400 };

Deno.test("a scale whose wallets cannot hold their events is refused, naming the value", () => {
  assert.throws(
    () => checkScale({ wallets: 10, kvEntries: 100, events: 200 }),
    { message: 'Invalid BENCH_LARGE_EVENTS "200": must be at least 3 per wallet and 2 per KV entry (230)' },
  );
  assert.throws(
    () => checkScale({ wallets: 10, kvEntries: 5, events: 200 }),
    { message: 'Invalid BENCH_LARGE_KV "5": must be at least BENCH_LARGE_WALLETS (10)' },
  );
});

Deno.test("the large part pairs each run with its round: medians of per-round ratios", () => {
  const run = (rate: number) => ({ rate }) as RunResult;
  // [large, small, pgbench] for GET then POST in each round.
  const rounds: LargeRound[] = [
    [1272, 1540, 4453, 1110, 1208, 4348],
    [1590, 1228, 4494, 1458, 1227, 3893],
    [1354, 1204, 3270, 956, 1039, 4475],
  ].map(([get, smallGet, getCeiling, post, smallPost, postCeiling]) => ({
    get: run(get),
    smallGet: run(smallGet),
    getCeiling: run(getCeiling),
    post: run(post),
    smallPost: run(smallPost),
    postCeiling: run(postCeiling),
  }));
  const ratios = largeRatios(rounds);
  assert.deepEqual(ratios.get, { median: 0.35, rounds: [0.29, 0.35, 0.41] });
  assert.deepEqual(ratios.getLargeVsSmall, { median: 1.12, rounds: [0.83, 1.29, 1.12] });
  assert.deepEqual(ratios.postLargeVsSmall, { median: 0.92, rounds: [0.92, 1.19, 0.92] });
  assert.equal(ratios.smallPost.median, 0.28);
});

Deno.test({
  name: "the seeded database is what the service's folds hold, and its tokens work",
  ignore: !postgres,
  async fn() {
    const database = await freshDatabase();
    // A COPY stream per seeded table at once.
    const db = await openDatabase({ ...openOptionsOf(database.env), maxConnections: 8 });
    try {
      await migrate(db.sql);
      const rows = await seedLargeDatabase(db.sql, SCALE, { now: new Date() });
      assert.equal(rows.events, SCALE.events);
      assert.equal(rows.wallets, SCALE.wallets);
      assert.equal(rows.kv_entries, SCALE.kvEntries);
      assert.equal(rows.payments, SCALE.wallets);
      // Calls are spread over 4 weeks and the log keeps one: some entries, not all.
      const calls = SCALE.events - 3 * SCALE.wallets - SCALE.kvEntries;
      assert.ok(rows.call_logs > 0 && rows.call_logs < calls, `${rows.call_logs} call-log rows`);
      const [{ strays }] = await db.sql`select count(*)::int as strays from call_logs_default`;
      assert.equal(strays, 0, "every call-log row is in its dated partition");

      const audit = await auditLedger(db.sql);
      assert.deepEqual(audit.mismatches, []);
      assert.equal(audit.events, SCALE.events);
      assert.equal(audit.creditsOut, calls);

      const replay = await replayProjections(db.sql, {});
      for (const table of replay.tables) {
        assert.deepEqual(
          [table.table, table.onlyLive, table.onlyReplayed],
          [table.table, 0, 0],
          table.samples.join("; "),
        );
      }
    } finally {
      await db.close();
    }

    const service = await startService({ database });
    try {
      const token = seededToken(7);
      const read = await fetch(`${service.url}${BENCH_KEY_PATH}`, { headers: { "x-token": token } });
      assert.equal(read.status, 200);
      assert.equal(await read.text(), "v".repeat(POST_VALUE_BYTES));
      // 1,000,100 credits (welcome and purchase), less the wallet's 14 seeded calls and this one.
      assert.equal(read.headers.get("x-balance"), "1000085");
      const unknown = await fetch(`${service.url}${BENCH_KEY_PATH}`, {
        headers: { "x-token": seededToken(SCALE.wallets) },
      });
      await unknown.body?.cancel();
      assert.equal(unknown.status, 401, "only the seeded wallets exist");
    } finally {
      await service.dispose();
    }
  },
});
