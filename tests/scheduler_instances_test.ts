// Two service instances on one Postgres database, in real time, both running their scheduler: every
// planned minute of six every-minute schedules is delivered exactly once, starts within 2 seconds of
// its minute, and is charged 2 credits once in the ledger. The embedded database belongs to one
// process, so there this test is skipped.
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, embedded, startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";

const MINUTE = 60_000;
/** How long the schedules run: at most 3 minutes, so 2 or 3 planned minutes each. */
const OBSERVED_MS = 170_000;
const SCHEDULES_PER_WALLET = 3;

Deno.test({
  name: embedded
    ? "scheduler across two instances (skipped: the embedded database is single-process; set DATABASE_URL)"
    : "scheduler across two instances: one delivery and one charge of 2 per planned time",
  ignore: embedded,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const receiver = startReceiver();
    const env = { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" };
    const first = await startService({ env });
    const second = await startService({ env, sharedWith: first });
    try {
      // One wallet talks to each instance; each instance also fires the other's runs.
      const wallets = [
        walletClient(first, await newToken(first)),
        walletClient(second, await newToken(second)),
      ];
      const secrets = new Map<string, string>();
      const createdAt = Date.now();
      for (const [w, wallet] of wallets.entries()) {
        for (let i = 0; i < SCHEDULES_PER_WALLET; i++) {
          const webhookId = `every-minute-${i}`;
          const created = await wallet.postJson("/webhook", {
            webhookId,
            url: `${receiver.url}/${w}/${webhookId}`,
            schedule: { cron: "* * * * *", timezone: "UTC" },
          });
          assert.equal(created.status, 200, created.text);
          secrets.set(`/${w}/${webhookId}`, created.json().secret);
        }
      }
      const firstMinute = Math.ceil((createdAt + 1) / MINUTE) * MINUTE;
      const planned: number[] = [];
      for (let at = firstMinute; at <= createdAt + OBSERVED_MS - 10_000; at += MINUTE) planned.push(at);
      assert.ok(planned.length >= 2);
      const expected = planned.length * secrets.size;

      await receiver.waitFor(expected, planned.at(-1)! - Date.now() + 20_000);
      // The next minute is well away: stop the schedules before it, and give a duplicate time to show.
      for (const wallet of wallets) {
        for (let i = 0; i < SCHEDULES_PER_WALLET; i++) {
          assert.equal((await wallet.delete(`/webhook/every-minute-${i}`)).status, 200);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 3000));

      const runs = receiver.received.map((request) => ({ request, body: JSON.parse(request.body) }));
      assert.equal(runs.length, expected, "exactly one delivery per planned time");
      for (const [path, secret] of secrets) {
        const mine = runs.filter((run) => run.request.path === path);
        assert.deepEqual(
          mine.map((run) => Date.parse(run.body.scheduledFor)).sort(),
          planned,
          `${path}: each planned minute once`,
        );
        for (const { request, body } of mine) {
          new Webhook(secret).verify(request.body, request.headers);
          const drift = Date.parse(body.executedAt) - Date.parse(body.scheduledFor);
          assert.ok(drift >= 0 && drift < 2000, `${path} ${body.scheduledFor} started ${drift} ms late`);
        }
      }
      const messageIds = new Set(
        runs.map((run) => `${run.request.path} ${run.request.headers["webhook-id"]}`),
      );
      assert.equal(messageIds.size, runs.length);

      const runsPerWallet = planned.length * SCHEDULES_PER_WALLET;
      for (const wallet of wallets) {
        // Creates and deletes cost 1 each, every run 2.
        const token = await wallet.get("/token");
        assert.equal(token.status, 200);
        assert.equal(token.balance, 100 - 2 * SCHEDULES_PER_WALLET - 2 * runsPerWallet - 1);
        const logs = await wallet.get("/token/logs?n=100&type=webhook-delivery");
        const entries = logs.json().logs as { method: string; cost: number; error?: string }[];
        const debits = entries.filter((entry) => entry.method === "CRON");
        assert.equal(debits.length, runsPerWallet, "one debit per run");
        assert.ok(debits.every((entry) => entry.cost === 2 && !entry.error));
        const attempts = entries.filter((entry) => entry.method === "POST");
        assert.equal(attempts.length, runsPerWallet, "one delivery attempt per run");
      }

      const audit = await auditOf(first);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    } finally {
      await second.dispose();
      await first.dispose();
      await receiver.close();
    }
  },
});
