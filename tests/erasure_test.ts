// Secrets at rest and erasure, as a user and an auditor see them: after a representative session
// (KV values, webhooks with header secrets in every format, mail with attachments, alert settings,
// a scoped key) no known secret is in the event log in clear, and the read models that hold one are
// exactly those the README lists; DELETE /token then leaves nothing of the wallet in clear anywhere,
// the other wallet untouched, its mailbox refusing mail, the audit clean and the replay equal.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import {
  auditOf,
  embedded,
  openOptionsOf,
  replayOf,
  runTask,
  type Service,
  startService,
} from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { openDatabase } from "../src/db/connect.ts";
import { sha256Hex } from "../src/ids.ts";

type Client = ReturnType<typeof walletClient>;

/** The read models allowed to keep a secret of each kind in clear (README "Secrets and erasure"). */
const SERVED_IN_CLEAR: Record<string, string[]> = {
  kvvalue: ["kv_entries", "idempotent_replies"],
  bucket: ["kv_entries", "call_logs", "scoped_keys", "idempotent_replies"],
  header: ["webhooks", "wallet_settings"],
  chat: ["webhooks"],
  routing: ["webhooks"],
  template: ["webhooks"],
  alertmail: ["wallet_settings"],
  keyname: ["scoped_keys"],
  subject: ["webhook_deliveries", "delivery_history"],
  sender: ["webhook_deliveries", "delivery_history"],
  mailbody: ["webhook_deliveries"],
  filename: ["webhook_deliveries", "delivery_history", "attachments"],
};

function secretsOf(wallet: string): Record<string, string> {
  return Object.fromEntries(Object.keys(SERVED_IN_CLEAR).map((kind) => [kind, `zq${kind}x${wallet}`]));
}

/** Every row of every table of the database as text, by table (the service stopped when embedded). */
async function dumpTables(svc: Service): Promise<Map<string, string>> {
  if (embedded) await svc.stop();
  const db = await openDatabase({ ...openOptionsOf(svc.databaseEnv), maxConnections: 1 });
  try {
    const tables = await db.sql<{ name: string }[]>`
      select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition order by 1`;
    const dump = new Map<string, string>();
    for (const { name } of tables) {
      const rows = await db.sql.unsafe(
        `select coalesce(string_agg(t::text, E'\\n'), '') as text from "${name}" t`,
      );
      // bytea is dumped as hex: the attachments' bytes are searched as text too.
      dump.set(name, String(rows[0].text).toLowerCase());
    }
    return dump;
  } finally {
    await db.close();
    if (embedded) await svc.start();
  }
}

function tablesHolding(dump: Map<string, string>, secret: string): string[] {
  const hex = [...new TextEncoder().encode(secret)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return [...dump].filter(([, text]) => text.includes(secret) || text.includes(hex)).map(([table]) => table);
}

async function session(client: Client, receiverUrl: string, s: Record<string, string>) {
  const ok = (answer: { status: number; text: string }, what: string) =>
    assert.equal(answer.status, 200, `${what}: ${answer.text}`);
  ok(await client.post(`/kv/${s.bucket}/k`, s.kvvalue, { "idempotency-key": "once" }), "kv write");
  ok(await client.post(`/kv/${s.bucket}/n/incr`), "kv incr");
  ok(await client.postJson("/token/keys", { name: s.keyname, scope: "read", buckets: [s.bucket] }), "key");
  const hook = (webhookId: string, extra: Record<string, unknown>) =>
    client.postJson("/webhook", {
      url: `${receiverUrl}/${webhookId}`,
      webhookId,
      headers: { Authorization: `Bearer ${s.header}` },
      ...extra,
    });
  const mailbox = await hook("raw", { includeAttachments: true });
  ok(mailbox, "mailbox");
  ok(await hook("slack", { format: "slack" }), "slack");
  ok(await hook("discord", { format: "discord" }), "discord");
  ok(await hook("teams", { format: "teams" }), "teams");
  ok(await hook("telegram", { format: "telegram", options: { chat_id: s.chat } }), "telegram");
  ok(
    await hook("pagerduty", { format: "pagerduty", options: { routing_key: s.routing.padEnd(32, "r") } }),
    "pagerduty",
  );
  ok(await hook("custom", { format: "custom", template: { say: `${s.template} {{text}}` } }), "custom");
  ok(await hook("cron", { schedule: { cron: "0 9 * * *", timezone: "UTC" } }), "scheduled");
  ok(
    await client.put(
      "/token/settings",
      JSON.stringify({
        low_balance_threshold: 5,
        low_balance_webhook: { url: `${receiverUrl}/alert`, headers: { "X-Alert": s.header } },
        low_balance_email: `${s.alertmail}@example.com`,
      }),
      { "content-type": "application/json" },
    ),
    "settings",
  );
  return mailbox.json().email as string;
}

Deno.test("secrets stay out of the log in clear, and an erased wallet leaves nothing readable", async (t) => {
  const svc = await startService({ smtp: true, env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  const receiver = startReceiver();
  try {
    const ann = walletClient(svc, await newToken(svc));
    const bob = walletClient(svc, await newToken(svc));
    const annHash = await sha256Hex(ann.token);
    const [annSecrets, bobSecrets] = [secretsOf("ann"), secretsOf("bob")];
    const annMailbox = await session(ann, receiver.url, annSecrets);
    const bobMailbox = await session(bob, receiver.url, bobSecrets);
    for (const [to, s] of [[annMailbox, annSecrets], [bobMailbox, bobSecrets]] as const) {
      const sent = await sendMail(svc, {
        to,
        from: `${s.sender}@sender.example`,
        subject: s.subject,
        text: s.mailbody,
        attachments: [{ filename: `${s.filename}.txt`, content: "attached" }],
      });
      assert.equal(sent.code, 250, sent.response);
    }
    const deadline = Date.now() + 15_000;
    while (receiver.received.filter((r) => r.path === "/raw").length < 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    await t.step("the log holds none of the secrets; only the listed read models hold them", async () => {
      const dump = await dumpTables(svc);
      for (const s of [annSecrets, bobSecrets]) {
        for (const [kind, secret] of Object.entries(s)) {
          const holding = tablesHolding(dump, secret);
          assert.ok(!holding.includes("events"), `${kind} "${secret}" is in the events in clear`);
          assert.deepEqual(
            holding.filter((table) => !SERVED_IN_CLEAR[kind].includes(table)),
            [],
            `${kind} in ${holding}`,
          );
        }
      }
      // The same secrets are in the log, sealed: the session did write them.
      assert.ok(dump.get("events")!.includes("_enc"));
    });

    await t.step("DELETE /token erases the wallet and answers what it erased", async () => {
      const erased = await ann.delete("/token");
      assert.equal(erased.status, 200, erased.text);
      assert.deepEqual(erased.json(), { hash: annHash, kvEntries: 2, webhooks: 8, keys: 1, attachments: 1 });
      assert.equal((await ann.get("/token")).status, 401);
      assert.equal((await ann.delete("/token")).status, 401);
      const refused = await sendMail(svc, { to: annMailbox, subject: "after", text: "x" });
      assert.equal(refused.code, 550, refused.response);
      assert.equal((await bob.get(`/kv/${bobSecrets.bucket}/k`)).text, bobSecrets.kvvalue);
    });

    await t.step("nothing of the erased wallet is left in clear; the other wallet is untouched", async () => {
      const dump = await dumpTables(svc);
      for (const [kind, secret] of Object.entries(annSecrets)) {
        assert.deepEqual(tablesHolding(dump, secret), [], `${kind} "${secret}" is still in clear`);
      }
      assert.ok(tablesHolding(dump, bobSecrets.kvvalue).includes("kv_entries"));
      assert.ok(tablesHolding(dump, bobSecrets.header).includes("webhooks"));
    });

    await t.step("the audit is clean and the replay rebuilds the same read models", async () => {
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
      const replay = await replayOf(svc);
      assert.equal(replay.code, 0, replay.stdout + replay.stderr);
    });

    await t.step("deno task erase: the operator's erasure, once", async () => {
      const carol = walletClient(svc, await newToken(svc));
      assert.equal((await carol.post("/kv/b/k", "carol's")).status, 200);
      const hash = await sha256Hex(carol.token);
      if (embedded) await svc.stop();
      try {
        const first = await runTask(svc, "erase", [hash]);
        assert.equal(first.code, 0, first.stderr);
        assert.equal(JSON.parse(first.stdout).kvEntries, 1);
        const again = await runTask(svc, "erase", [hash]);
        assert.equal(JSON.parse(again.stdout).reason, "already erased");
        const bad = await runTask(svc, "erase", ["nothex"]);
        assert.equal(bad.code, 2);
        assert.match(bad.stderr, /Invalid wallet hash "nothex"/);
      } finally {
        if (embedded) await svc.start();
      }
      assert.equal((await carol.get("/kv/b/k")).status, 401);
    });
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});
