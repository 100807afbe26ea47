// Deliveries are kept 7 days (issue 13): the outbox rows with their payloads and the delivery
// history leave by whole time partitions; within the 7 days a delivery is listed and can be sent
// again. Migration 008 keeps the outbox rows it converts, still due.
import assert from "node:assert/strict";
import { migrate } from "../src/db/migrate.ts";
import { listPartitions } from "../src/db/partitions.ts";
import { preparePartitions } from "../src/sweeper.ts";
import { sweepExpiredDeliveries } from "../src/webhooks/retention.ts";
import { claimDueDeliveries } from "../src/webhooks/delivery_claims.ts";
import { acceptMessage } from "../src/email/accept.ts";
import { withFreshDatabase } from "./helpers/database.ts";
import { inProcessService } from "./helpers/in_process.ts";

const DAY = 24 * 3600 * 1000;

Deno.test("migration 008 keeps the outbox rows it converts, due as before", async () => {
  await withFreshDatabase(async (sql) => {
    await sql`create table schema_migrations (version text primary key, applied_at timestamptz not null default now())`;
    const before = [
      "001_ledger",
      "002_webhooks",
      "003_payments",
      "004_wallet_settings",
      "005_schedules",
      "006_partitions",
      "007_alert_channels",
    ];
    for (const file of before) {
      await sql.unsafe(await Deno.readTextFile(new URL(`../src/db/migrations/${file}.sql`, import.meta.url)));
      await sql`insert into schema_migrations (version) values (${`${file}.sql`})`;
    }
    const now = new Date();
    await sql`
      insert into webhook_deliveries (wallet_id, id, webhook_id, kind, payload, message_id, cost, attempts,
                                      next_attempt_at, created_at)
      values ('w1', 'dlv_old', 'inbox', 'email', '{"subject": "kept"}', 'msg_old', 2, 1, ${now}, ${now})`;
    // 008, 009 and every migration after them apply on that schema.
    assert.deepEqual((await migrate(sql)).slice(0, 2), [
      "008_delivery_history.sql",
      "009_webhook_health.sql",
    ]);
    const [row] = await sql`select expires_at, held, payload from webhook_deliveries where id = 'dlv_old'`;
    assert.equal(row.expires_at.getTime(), now.getTime() + 7 * DAY);
    assert.deepEqual([row.held, row.payload], [false, { subject: "kept" }]);
    const [claimed] = await claimDueDeliveries(sql, { now, limit: 10, leaseMs: 1000 });
    assert.deepEqual([claimed.id, claimed.attempts, claimed.messageId], ["dlv_old", 1, "msg_old"]);
  });
});

Deno.test("a delivery is listed and sent again for 7 days, then leaves with its partitions", async () => {
  const svc = await inProcessService({ UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", MAIL_DOMAIN: "mail.test" });
  try {
    await preparePartitions(svc.db.sql, svc.clock.now());
    const token = await svc.newToken();
    const created = await svc.request("POST", "/webhook", {
      token,
      body: JSON.stringify({ url: "http://127.0.0.1:9/hook", webhookId: "inbox" }),
    });
    const mailbox = JSON.parse(created.text).email;
    const raw = new TextEncoder().encode(
      `From: a@x.example\r\nTo: ${mailbox}\r\nSubject: Kept\r\nMessage-ID: <k@x>\r\n\r\nHi\r\n`,
    );
    const reply = await acceptMessage(
      { sql: svc.db.sql, ledger: svc.ledger, clock: svc.clock, mailDomain: "mail.test" },
      { raw, recipients: [mailbox], startedAt: 0 },
    );
    assert.equal(reply.code, 250);
    const list = async () =>
      JSON.parse((await svc.request("GET", "/webhook/inbox/deliveries", { token })).text).deliveries;
    const [delivery] = await list();
    assert.equal(delivery.status, "pending");
    const rows = async () =>
      (await svc.db.sql`
        select (select count(*)::int from webhook_deliveries) as outbox,
               (select count(*)::int from delivery_history) as history`)[0];

    svc.clock.advance(6 * DAY);
    await sweepExpiredDeliveries(svc.db.sql, svc.clock.now());
    assert.equal((await list()).length, 1, "still there after 6 days");
    const retried = await svc.request("POST", `/webhook/inbox/deliveries/${delivery.deliveryId}/retry`, {
      token,
    });
    assert.equal(retried.status, 200, retried.text);

    // Past the end of the 12-hour partition that holds its expiry.
    svc.clock.advance(DAY + 12 * 3600 * 1000 + 60_000);
    const swept = await sweepExpiredDeliveries(svc.db.sql, svc.clock.now());
    assert.ok(swept.outbox.dropped.length > 0 && swept.history.dropped.length > 0);
    assert.deepEqual(await rows(), { outbox: 0, history: 0 }, "physically gone, payload and all");
    const names = (await listPartitions(svc.db.sql, "delivery_history")).map((p) => p.name);
    assert.ok(swept.history.dropped.every((name) => !names.includes(name)));
    assert.deepEqual(await list(), []);
    const gone = await svc.request("GET", `/webhook/inbox/deliveries/${delivery.deliveryId}`, { token });
    assert.deepEqual([gone.status, gone.text], [404, "Delivery not found"]);
  } finally {
    await svc.close();
  }
});
