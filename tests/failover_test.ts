// The service on a two-host DATABASE_URL (target_session_attrs=read-write) over a primary and a
// synchronous standby of our own: clients write KV values, the primary is stopped hard, the
// standby is left read-only for a while and then promoted. Meanwhile every answer is a 200 or a 503
// with Retry-After (never a 500 of a write sent to the standby); after the promotion the service
// writes again on its own; every acknowledged write reads back, nothing is charged twice, and the
// audit and replay are clean on the promoted node.
import assert from "node:assert/strict";
import { embedded, runTask, startService, TEST_MASTER_KEY } from "./helpers/service.ts";
import { TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { createStandbyPair, psql, type StandbyPair } from "./helpers/standby_pair.ts";
import { type Answer, startLoad } from "../src/tasks/chaos/load.ts";
import { verifyLoad } from "../src/tasks/chaos/verify.ts";
import { fundedWallets } from "../src/tasks/chaos/wallets.ts";
import { NO_SYNC_STANDBY } from "../src/db/standby_watch.ts";

const CLIENTS = 8;
const DATABASE = "failover";
/** How long only the read-only standby is up before it is promoted. */
const STANDBY_ONLY_MS = 3_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function readyzText(url: string): Promise<string> {
  const res = await fetch(`${url}/readyz`);
  return `${res.status} ${await res.text()}`;
}

function describe(answers: Answer[]): string {
  return answers.slice(0, 5).map((a) => `${a.kind} ${a.status} ${a.phrase.slice(0, 120)}`).join("; ");
}

/** Waits until a write is answered 200 after `since`; fails the test past `withinMs`. */
async function writesServedAfter(answers: Answer[], since: number, withinMs: number) {
  const deadline = performance.now() + withinMs;
  while (!answers.some((a) => a.kind === "write" && a.status === 200 && a.at >= since)) {
    assert.ok(performance.now() < deadline, `No write served within ${withinMs} ms of the promotion`);
    await sleep(100);
  }
}

Deno.test({
  name:
    "failover: primary lost, standby promoted; the service follows on its own with nothing acknowledged lost",
  ignore: embedded, // Needs Postgres servers of its own, as the rest of the Postgres suite does.
  async fn() {
    let pair: StandbyPair;
    try {
      pair = await createStandbyPair(DATABASE);
    } catch (error) {
      // Only when Debian's PostgreSQL packages cannot be installed here.
      if (String(error).includes("apt-get")) {
        console.log(`SKIPPED: no PostgreSQL cluster tools (${String(error).split("\n")[0]})`);
        return;
      }
      throw error;
    }
    const env = { DATABASE_URL: pair.databaseUrl, MASTER_KEY: TEST_MASTER_KEY };
    const service = await startService({
      database: { env, drop: () => pair.drop() },
      env: { PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET, DATABASE_TIMEOUT_MS: "1500" },
    }).catch(async (error) => {
      await pair.drop();
      throw error;
    });
    try {
      assert.equal(await readyzText(service.url), "200 OK", "A synchronous standby: no detail");
      const wallets = await fundedWallets(service.url, CLIENTS, TEST_PAYMENT_SECRET);
      const load = startLoad({ baseUrl: service.url, tokens: wallets.tokens, callTimeoutMs: 10_000 });
      await sleep(1_500);
      await pair.primary.crash();
      const crashedAt = performance.now();
      await sleep(STANDBY_ONLY_MS);
      await pair.standby.promote();
      const promotedAt = performance.now();
      await writesServedAfter(load.answers, promotedAt, 20_000);
      await sleep(1_000);
      const answers = await load.stop();

      const during = answers.filter((a) => a.at >= crashedAt && a.at < promotedAt);
      assert.ok(during.some((a) => a.status === 503), "The clients saw the primary go");
      const odd = answers.filter((a) => !(a.status === 200 || (a.status === 503 && a.retryAfter)));
      assert.equal(odd.length, 0, `Answers other than 200 and 503 with Retry-After: ${describe(odd)}`);
      assert.ok(
        answers.some((a) => a.kind === "write" && a.status === 200 && a.at < crashedAt),
        "Writes were served before the failover",
      );

      const verdict = await verifyLoad(
        { baseUrl: service.url, tokens: wallets.tokens, callTimeoutMs: 10_000 },
        answers,
        wallets.balances,
      );
      assert.ok(verdict.acknowledged > 20, `Only ${verdict.acknowledged} writes were acknowledged`);
      assert.deepEqual(verdict.lost, [], "Every acknowledged write reads back from the promoted node");
      assert.deepEqual(verdict.unexpected, [], "Resent writes are answered 200");
      assert.deepEqual(verdict.wrongCharges, [], "Every wallet paid for its calls exactly once");
      assert.equal(
        await psql(pair.standby.port, DATABASE, "select pg_is_in_recovery()"),
        "f\n",
        "The service wrote to the promoted node",
      );
      assert.doesNotMatch(service.output(), /Uncaught|TypeError/);
      // The promoted node has no standby of its own: commits are on one machine, and /readyz says so.
      assert.equal(await readyzText(service.url), `200 OK (${NO_SYNC_STANDBY})`);
      assert.match(service.output(), /"level":"warn","message":"database: no synchronous standby/);

      const audit = await runTask(service, "audit");
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
      const replay = await runTask(service, "replay");
      assert.equal(replay.code, 0, replay.stdout + replay.stderr);
    } finally {
      await service.dispose();
    }
  },
});
