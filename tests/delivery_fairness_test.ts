// Fair delivery slots (issue 21): the claim gives the wallets with due deliveries turns, a wallet at
// most DELIVERY_SLOTS_PER_WALLET slots and one endpoint of it at most DELIVERY_SLOTS_PER_ENDPOINT,
// within a webhook oldest first; so through real SMTP, a wallet whose endpoint never answers, with
// hundreds of deliveries due, holds its share of the slots and another wallet's delivery starts at
// once instead of after its 10 s timeouts.
import assert from "node:assert/strict";
import { migrate } from "../src/db/migrate.ts";
import {
  claimDueDeliveries,
  endpointKey,
  endpointsWithDueDeliveries,
  WALK_FROM_START,
} from "../src/webhooks/delivery_claims.ts";
import { withFreshDatabase } from "./helpers/database.ts";
import { startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { newToken, walletClient } from "./helpers/client.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";

const ATTACKER = "a".repeat(64);
const VICTIM = "f".repeat(64);

Deno.test("a claim takes turns between wallets and keeps each wallet and endpoint to its share", async () => {
  await withFreshDatabase(async (sql) => {
    await migrate(sql);
    const now = new Date();
    const expires = new Date(now.getTime() + 7 * 24 * 3600_000);
    // 10,000 deliveries of one wallet due for a minute, all to webhook "silent" but the newest, to
    // "other"; then one of another wallet, due just now.
    await sql`
      insert into webhook_deliveries (wallet_id, id, webhook_id, kind, payload, message_id, cost, next_attempt_at,
                                      created_at, expires_at)
      select ${ATTACKER}, 'dlv_a' || lpad(i::text, 5, '0'), case when i = 10000 then 'other' else 'silent' end,
             'email', '{}', 'msg_a' || i, 2, ${new Date(now.getTime() - 60_000)},
             ${new Date(now.getTime() - 60_000)}::timestamptz + i * interval '1 ms', ${expires}
      from generate_series(1, 10000) i`;
    await sql`
      insert into webhook_deliveries (wallet_id, id, webhook_id, kind, payload, message_id, cost, next_attempt_at,
                                      created_at, expires_at)
      values (${VICTIM}, 'dlv_v', 'inbox', 'email', '{}', 'msg_v', 2, ${now}, ${now}, ${expires})`;
    const shares = { perWallet: 2, perEndpoint: 1 };
    const walk = (inUse?: Parameters<typeof claimDueDeliveries>[1]["inUse"]) =>
      endpointsWithDueDeliveries(sql, {
        now,
        after: WALK_FROM_START,
        limit: 10,
        shares,
        ...(inUse ? { inUse } : {}),
      });
    const endpoints = await walk();
    assert.deepEqual(endpoints, [
      { walletId: ATTACKER, endpoint: "other" },
      { walletId: ATTACKER, endpoint: "silent" },
      { walletId: VICTIM, endpoint: "inbox" },
    ], "each endpoint with due rows once, however many rows it has");

    // The first claim of two slots: one turn each, the attacker's oldest row and the victim's.
    const first = await claimDueDeliveries(sql, { now, limit: 2, leaseMs: 60_000, endpoints, shares });
    assert.deepEqual(first.map((d) => d.id), ["dlv_a00001", "dlv_v"]);

    // Two instances claiming at the same moment never take the same row.
    const attackers = endpoints.filter((e) => e.walletId === ATTACKER);
    const [one, two] = await Promise.all(
      [1, 2].map(() =>
        claimDueDeliveries(sql, { now, limit: 1, leaseMs: 60_000, endpoints: attackers, shares })
      ),
    );
    const both = [...one, ...two].map((d) => d.id);
    assert.equal(new Set(both).size, both.length, `no row twice: ${both}`);

    // With one attempt of its "silent" webhook in flight, the attacker's share of 2 and 1 per
    // endpoint leave it one more slot, only for the endpoint it does not use yet, however many
    // rows the other one has before.
    const inUse = {
      wallets: new Map([[ATTACKER, 1]]),
      endpoints: new Map([[endpointKey(ATTACKER, "silent"), 1]]),
    };
    const more = await claimDueDeliveries(sql, { now, limit: 10, leaseMs: 60_000, endpoints, shares, inUse });
    assert.deepEqual(more.map((d) => [d.id, d.webhookId]), [["dlv_a10000", "other"]]);
    // A wallet at its share is walked past at once, and gets nothing more.
    const saturated = {
      wallets: new Map([[ATTACKER, 2]]),
      endpoints: new Map([[endpointKey(ATTACKER, "silent"), 1], [endpointKey(ATTACKER, "other"), 1]]),
    };
    assert.deepEqual(await walk(saturated), [
      { walletId: ATTACKER, endpoint: "other" },
      { walletId: VICTIM, endpoint: "inbox" },
    ]);
    assert.deepEqual(
      await claimDueDeliveries(sql, { now, limit: 10, leaseMs: 60_000, endpoints, shares, inUse: saturated }),
      [],
    );
    // Within a webhook, oldest first: the silent webhook's rows went out in the order they came.
    const silent = await sql<{ id: string }[]>`
      select id from webhook_deliveries where wallet_id = ${ATTACKER} and webhook_id = 'silent'
        and claim_token is not null order by id`;
    assert.deepEqual(
      silent.map((r) => r.id),
      ["dlv_a00001", "dlv_a00002", "dlv_a00003"].slice(0, silent.length),
    );
  });
});

Deno.test({
  name:
    "a silent endpoint with hundreds of deliveries due holds its wallet's share; another wallet's delivery starts at once",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // Never answers while the test runs (the attempt times out after 10 s); answers 503 at close.
    const silent = startReceiver();
    silent.reply(silent.slowly(120_000));
    const inbox = startReceiver(() => new Response("ok"));
    const svc = await startService({
      smtp: true,
      env: {
        UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
        PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET,
        DELIVERY_SLOTS: "4",
        DELIVERY_SLOTS_PER_WALLET: "2",
        DELIVERY_SLOTS_PER_ENDPOINT: "1",
      },
    });
    try {
      const attackerToken = await newToken(svc);
      await buyCredits(svc, attackerToken);
      const attacker = walletClient(svc, attackerToken);
      const mailboxes: string[] = [];
      for (let i = 0; i < 20; i++) {
        const created = await attacker.postJson("/webhook", {
          webhookId: `sink${i}`,
          url: `${silent.url}/sink${i}`,
        });
        assert.equal(created.status, 200, created.text);
        mailboxes.push(created.json().email);
      }
      // 10 mails to the 20 mailboxes: 200 deliveries due to an endpoint that never answers.
      for (let i = 0; i < 10; i++) {
        const sent = await sendMail(svc, { to: mailboxes.join(", "), subject: `Flood ${i}`, text: "x" });
        assert.equal(sent.code, 250, sent.response);
      }
      await silent.waitFor(2);

      const victim = walletClient(svc, await newToken(svc));
      const hook = await victim.postJson("/webhook", { webhookId: "inbox", url: `${inbox.url}/inbox` });
      assert.equal(hook.status, 200, hook.text);
      const started = performance.now();
      const sent = await sendMail(svc, { to: hook.json().email, subject: "Hello", text: "Body" });
      assert.equal(sent.code, 250, sent.response);
      // Before: every slot held by the silent endpoint for 10 s, and its older rows claimed first.
      const [delivery] = await inbox.waitFor(1, 5_000);
      const waitedMs = delivery.at - started;
      assert.ok(waitedMs < 2_000, `the victim's delivery started after ${Math.round(waitedMs)} ms`);
      assert.equal(JSON.parse(delivery.body).subject, "Hello");
      assert.equal(silent.received.length, 2, "the attacker holds its wallet's 2 slots, no more");
    } finally {
      // The held attempts end at once (503), so the service stops without waiting for timeouts.
      await silent.close();
      await inbox.close();
      await svc.dispose();
    }
  },
});
