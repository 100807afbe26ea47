// Faults inside the SMTP receiver, run in-process so a fault can be injected into the ledger:
// a failed acceptance answers 451 and changes nothing, a retry after a partial failure charges
// nobody twice, and a session past its time limit is closed.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { sendMail } from "./helpers/smtp.ts";
import { startSmtpReceiver } from "../src/email/smtp_server.ts";
import type { Ledger } from "../src/ledger/ledger.ts";
import type { BilledCommand, DecideState } from "../src/ledger/command.ts";
import { sha256Hex } from "../src/ids.ts";

type InProcess = Awaited<ReturnType<typeof inProcessService>>;

async function mailboxOf(svc: InProcess, token: string, webhookId: string): Promise<string> {
  const created = await svc.request("POST", "/webhook", {
    token,
    body: JSON.stringify({ url: "http://127.0.0.1:9/unused", webhookId }),
    headers: { "content-type": "application/json" },
  });
  assert.equal(created.status, 200, created.text);
  return JSON.parse(created.text).email;
}

async function balance(svc: InProcess, token: string): Promise<number> {
  const [row] = await svc.db.sql`select balance from wallets where wallet_id = ${await sha256Hex(token)}`;
  return row.balance;
}

async function count(
  svc: InProcess,
  table: "webhook_deliveries" | "attachments",
  token: string,
): Promise<number> {
  const [row] = await svc.db.sql`select count(*)::int as n from ${svc.db.sql(table)}
    where wallet_id = ${await sha256Hex(token)}`;
  return row.n;
}

/**
 * A ledger whose commands for `walletIds` fail inside the transaction as it writes: their decision
 * gains an outbox row the table refuses, next to the real outbox row, files and events.
 */
function faultyLedger(ledger: Ledger, walletIds: Set<string>): Ledger {
  return {
    ...ledger,
    runBilled(command: BilledCommand<any, any>) {
      if (!walletIds.has(command.walletId)) return ledger.runBilled(command);
      return ledger.runBilled({
        ...command,
        decide(state: DecideState<any>) {
          const decision: any = command.decide(state);
          const refused = { type: "queueDelivery", delivery: { walletId: command.walletId } };
          return { ...decision, effects: [...(decision.effects ?? []), refused] };
        },
      });
    },
  };
}

Deno.test("SMTP faults: 451 and nothing changed; a retry charges no one twice; long sessions end", async (t) => {
  const svc = await inProcessService({ UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" });
  const failing = new Set<string>();
  const receiver = await startSmtpReceiver({
    sql: svc.db.sql,
    ledger: faultyLedger(svc.ledger, failing),
    clock: svc.clock,
    mailDomain: "mail.localhost",
    port: 0,
    hostname: "127.0.0.1",
    maxSessionMs: 1000,
  });
  const target = { smtpPort: receiver.port };
  try {
    const ann = await svc.newToken();
    const bob = await svc.newToken();
    const annBox = await mailboxOf(svc, ann, "a");
    const bobBox = await mailboxOf(svc, bob, "b");
    const file = { filename: "f.txt", content: "file" };

    await t.step("a fault inside the transaction: 451 4.3.0, no debit, no outbox row, no file", async () => {
      failing.add(await sha256Hex(ann));
      const sent = await sendMail(target, { to: annBox, subject: "Fails", text: "x", attachments: [file] });
      assert.equal(sent.response, "451 4.3.0 Temporary failure, try again later");
      assert.equal(await balance(svc, ann), 99);
      assert.equal(await count(svc, "webhook_deliveries", ann), 0);
      assert.equal(await count(svc, "attachments", ann), 0);
      failing.clear();
    });

    await t.step("one of two mailboxes fails: 451; the sender's retry charges each owner once", async () => {
      failing.add(await sha256Hex(bob));
      const message = {
        to: [annBox, bobBox],
        subject: "Both",
        text: "x",
        messageId: "<retry@sender.example>",
      };
      const first = await sendMail(target, message);
      assert.equal(first.code, 451, first.response);
      assert.deepEqual([await balance(svc, ann), await balance(svc, bob)], [97, 99]);
      failing.clear();
      const retry = await sendMail(target, message);
      assert.equal(retry.code, 250, retry.response);
      assert.deepEqual([await balance(svc, ann), await balance(svc, bob)], [97, 97]);
      assert.deepEqual([
        await count(svc, "webhook_deliveries", ann),
        await count(svc, "webhook_deliveries", bob),
      ], [
        1,
        1,
      ]);
    });

    await t.step("a session past its time limit gets 421 and is closed", async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: receiver.port });
      try {
        const buf = new Uint8Array(4096);
        let text = "";
        const deadline = performance.now() + 20_000;
        while (performance.now() < deadline) {
          const n = await conn.read(buf);
          if (n === null) break;
          text += new TextDecoder().decode(buf.subarray(0, n));
        }
        assert.match(text, /^220 /);
        assert.match(text, /\r\n421 4\.4\.2 Session too long, closing\r\n$/);
      } finally {
        conn.close();
      }
    });
  } finally {
    await receiver.stop();
    await svc.close();
  }
});
