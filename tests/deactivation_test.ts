// Tokens unused for two years are deactivated, with a clock the test moves.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { deactivateIdleWallets } from "../src/wallets/deactivation.ts";
import { auditLedger } from "../src/tasks/audit.ts";
import { findMailbox } from "../projections/webhooks.ts";

const DAY = 24 * 3600 * 1000;

Deno.test({
  name: "deactivation after two years without an authenticated call",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const svc = await inProcessService();
    try {
      const active = await svc.newToken();
      const idle = await svc.newToken();
      await svc.request("POST", "/kv/b/k", { token: idle, body: "kept until deactivation" });
      await svc.request("POST", "/kv/b/k", { token: active, body: "v" });
      const mailbox = await svc.request("POST", "/webhook", {
        token: idle,
        body: JSON.stringify({ webhookId: "inbox", url: "https://example.com/hook" }),
      });
      assert.equal(mailbox.status, 200, mailbox.text);
      const address: string = JSON.parse(mailbox.text).email;
      const scheduled = await svc.request("POST", "/webhook", {
        token: idle,
        body: JSON.stringify({
          webhookId: "nightly",
          url: "https://example.com/cron",
          schedule: { cron: "0 3 * * *", timezone: "UTC" },
        }),
      });
      assert.equal(scheduled.status, 200, scheduled.text);
      await svc.request("PUT", "/token/settings", {
        token: idle,
        body: JSON.stringify({ low_balance_threshold: 10, low_balance_email: "owner@example.com" }),
      });
      const lastUse = svc.clock.now();
      const sweep = () => deactivateIdleWallets(svc.db.sql, svc.ledger, svc.clock);

      await t.step("two years minus a day after the last call: still active", async () => {
        const twoYears = new Date(lastUse);
        twoYears.setUTCFullYear(twoYears.getUTCFullYear() + 2);
        svc.clock.advance(twoYears.getTime() - lastUse.getTime() - DAY);
        assert.equal((await svc.request("GET", "/token", { token: active })).status, 200); // keeps it in use
        assert.equal(await sweep(), 0);
        const [row] = await svc.db.sql`select deactivated_at from wallets where deactivated_at is not null`;
        assert.equal(row, undefined, "nobody is deactivated yet");
      });

      await t.step(
        "two years plus a day after the last call: deactivated, with every consequence",
        async () => {
          svc.clock.advance(2 * DAY + 1);
          const kvRows = () =>
            svc.db.sql`select count(*)::int as count from kv_entries`.then((r: any) => r[0].count);
          assert.equal(await kvRows(), 2, "both entries are still rows (expired, not yet swept)");
          assert.equal(await sweep(), 1, "only the idle wallet");
          assert.equal(await kvRows(), 1, "the idle wallet's entry left the KV projection");
          const refused = await svc.request("GET", "/token", { token: idle });
          assert.deepEqual([refused.status, refused.text], [401, "Unauthorized"]);
          assert.equal((await svc.request("GET", "/webhook", { token: idle })).status, 401);
          const count = async (table: string) =>
            (await svc.db.sql.unsafe(`select count(*)::int as n from ${table}`))[0].n;
          assert.equal(await count("webhooks"), 0, "its webhooks left the registry");
          assert.equal(await count("schedules"), 0, "its schedule left the scheduler's table");
          assert.equal(await count("wallet_settings"), 0, "its alert settings are gone");
          assert.equal(await findMailbox(svc.db.sql, address), undefined, "its mailbox refuses mail");
          assert.equal((await svc.request("GET", "/kv/b/k", { token: idle })).status, 401);
          assert.equal(
            (await svc.request("GET", "/token", { token: active })).status,
            200,
            "the other one is fine",
          );
          assert.equal(await sweep(), 0, "deactivated once");
        },
      );

      await t.step("the ledger keeps its events and the audit adds up", async () => {
        const report = await auditLedger(svc.db.sql);
        assert.deepEqual(report.mismatches, []);
        const [{ count }] = await svc.db
          .sql`select count(*)::int as count from events where type = 'WalletDeactivated'`;
        assert.equal(count, 1);
      });
    } finally {
      await svc.close();
    }
  },
});
