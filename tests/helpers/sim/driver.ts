// The simulation's driver: draws a seeded sequence of steps (KV, webhooks, payments, emails, scoped
// keys, scheduler passes, the clock moving, deactivation), runs each through the real service in the
// test process (HTTP app, ledger, SMTP acceptance, scheduler, sweeps) and through the model, and
// fails on the first answer that differs, naming the seed and the step.
import assert from "node:assert/strict";
import type { InProcessService } from "../in_process.ts";
import { type Billed, gridAfter, ModelWallet, random } from "./model.ts";
import type { Answer } from "./kv_ops.ts";
import { compareBilled, kvStep, mixedBurstStep, readModifyWriteStep } from "./kv_steps.ts";
import { sha256Hex } from "../../../src/ids.ts";
import { signStripePayload } from "../../../src/payments/stripe_signature.ts";
import { acceptMessage } from "../../../src/email/accept.ts";
import { runDueSchedules } from "../../../src/schedules/scheduler.ts";
import { deactivateIdleWallets } from "../../../src/wallets/deactivation.ts";
import { TEST_PAYMENT_SECRET } from "../credits.ts";
import { keyStep } from "./key_steps.ts";

export const MAIL_DOMAIN = "mail.test";
const WEBHOOK_IDS = ["w1", "w2", "w3"];
// Moves of the clock: odd seconds keep every planned run and expiry away from the instant of a step.
const CLOCK_MOVES = [0, 1807_000, 3607_000, 7207_000, 25 * 3600_000 + 7000];
const TWO_YEARS_AND_A_DAY = (2 * 366 + 1) * 24 * 3600_000;

type Rng = ReturnType<typeof random>;
export type Step = (wallet: ModelWallet) => Promise<string>;

export class Simulation {
  readonly wallets: ModelWallet[] = [];
  readonly rng: Rng;
  readonly trace: string[] = [];

  constructor(readonly svc: InProcessService, readonly seed: number) {
    this.rng = random(seed);
  }

  now(): number {
    return this.svc.clock.now().getTime();
  }

  /** Opens the wallets; half of them start nearly empty, so refusals at the price are common. */
  async open(count: number) {
    for (let i = 0; i < count; i++) {
      const token = await this.svc.newToken();
      const wallet = new ModelWallet(token, await sha256Hex(token));
      this.wallets.push(wallet);
      if (i % 2 === 0) await this.drain(wallet, this.rng.int(12));
    }
  }

  /** Spends a wallet down to `left` credits with one burst of writes. */
  async drain(w: ModelWallet, left: number) {
    const keys = Array.from({ length: w.balance - left }, (_, i) => `drain${i}`);
    const answers = await Promise.all(
      keys.map((key) => this.svc.request("POST", `/kv/d/${key}`, { token: w.token, body: key })),
    );
    assert.ok(answers.every((a) => a.status === 200));
    for (const key of keys) w.kv.set(`d/${key}`, { value: key, expiresAt: this.now() + 2_592_000_000 });
    w.balance = left;
  }

  /** Compares a billed HTTP answer with the model's. */
  async expectBilled(what: string, answer: Promise<Answer>, model: Billed) {
    const res = await answer;
    compareBilled(what, res, model);
    return res;
  }

  send(w: ModelWallet, op: { method: string; path: string; headers: Record<string, string>; body?: string }) {
    return this.svc.request(op.method, op.path, { token: w.token, headers: op.headers, body: op.body });
  }

  /** A KV call alone, a read-modify-write with If-Match, or a burst of several at once. */
  kvStep(): Step {
    const roll = this.rng.next();
    return roll < 0.2 ? mixedBurstStep(this) : roll < 0.35 ? readModifyWriteStep(this) : kvStep(this);
  }

  /** Several writes of one wallet at once: they share ledger batches in an order no one chooses. */
  burstStep(): Step {
    const n = 2 + this.rng.int(5);
    return async (w) => {
      const keys = Array.from({ length: n }, (_, i) => `burst${i}`);
      const answers = await Promise.all(
        keys.map((key) => this.svc.request("POST", `/kv/b/${key}`, { token: w.token, body: key })),
      );
      if (w.deactivated) {
        assert.deepEqual(answers.map((a) => a.status), keys.map(() => 401));
        return `burst of ${n} (deactivated)`;
      }
      const served = Math.min(n, w.balance);
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [
        ...keys.slice(0, served).map(() => 200),
        ...keys.slice(served).map(() => 402),
      ]);
      const balances = answers.filter((a) => a.status === 200).map((a) => Number(a.headers.get("x-balance")));
      assert.deepEqual(
        balances.sort((a, b) => b - a),
        keys.slice(0, served).map((_, i) => w.balance - 1 - i),
      );
      // Which ones were served is the batch's order; the model takes exactly those.
      answers.forEach((a, i) => {
        if (a.status === 200) {
          w.kv.set(`b/${keys[i]}`, { value: keys[i], expiresAt: this.now() + 2_592_000_000 });
        }
      });
      w.balance -= served;
      return `burst of ${n}`;
    };
  }

  webhookStep(): Step {
    const rng = this.rng;
    const id = rng.pick(WEBHOOK_IDS);
    const scheduled = rng.chance(0.3);
    const includeAttachments = rng.chance(0.5);
    const remove = rng.chance(0.25);
    return async (w) => {
      if (remove) {
        const model = w.deleteWebhook(id);
        await this.expectBilled(
          `DELETE /webhook/${id}`,
          this.svc.request("DELETE", `/webhook/${id}`, { token: w.token }),
          model,
        );
        return `DELETE /webhook/${id}`;
      }
      const config = scheduled
        ? { schedule: { cron: "*/5 * * * *", timezone: "UTC" } }
        : { includeAttachments };
      const body = JSON.stringify({ url: "https://example.com/hook", webhookId: id, ...config });
      const pending = this.svc.request("POST", "/webhook", { token: w.token, body });
      const model = w.createWebhook(
        id,
        scheduled ? { includeAttachments: false, nextRun: gridAfter(this.now()) } : { includeAttachments },
      );
      const res = await this.expectBilled(`POST /webhook ${id}`, pending, model);
      if (res.status === 200 && !scheduled) w.webhooks.get(id)!.email = JSON.parse(res.text).email;
      return `POST /webhook ${id}${scheduled ? " scheduled" : ""}`;
    };
  }

  /** Pauses or resumes a webhook; the deliveries waiting as `paused` are listed. */
  pauseStep(): Step {
    const rng = this.rng;
    const id = rng.pick(WEBHOOK_IDS);
    const active = rng.chance(0.5);
    return async (w) => {
      const body = JSON.stringify({ active });
      const model = w.setActive(id, active);
      const path = `/webhook/${id}`;
      await this.expectBilled(
        `PATCH ${path} active=${active}`,
        this.svc.request("PATCH", path, { token: w.token, body }),
        model,
      );
      const webhook = w.webhooks.get(id);
      if (model.status !== 200 || !webhook) return `PATCH ${path} active=${active}: ${model.status}`;
      const list = w.bill(1, () => ({ status: 200 }));
      const res = await this.expectBilled(
        `GET ${path}/deliveries?status=paused`,
        this.svc.request("GET", `${path}/deliveries?status=paused&limit=100`, { token: w.token }),
        list,
      );
      if (res.status === 200) {
        const paused = JSON.parse(res.text).deliveries.length;
        assert.equal(paused, webhook.paused ? webhook.waiting ?? 0 : 0, `paused deliveries of ${id}`);
      }
      return `PATCH ${path} active=${active}`;
    };
  }

  paymentStep(): Step {
    const eventId = `evt_${this.seed}_${this.rng.int(3)}`;
    return async (w) => {
      const body = JSON.stringify({
        id: `${eventId}_${w.hash.slice(0, 8)}`,
        type: "checkout.session.completed",
        data: { object: { client_reference_id: w.token, payment_status: "paid", metadata: { tier: "1" } } },
      });
      const signature = await signStripePayload(body, TEST_PAYMENT_SECRET, this.svc.clock.now());
      const res = await this.svc.request("POST", "/payments/webhook", {
        body,
        headers: { "content-type": "application/json", "stripe-signature": signature },
      });
      assert.equal(res.status, w.pay(`${eventId}_${w.hash.slice(0, 8)}`), `payment ${eventId}: ${res.text}`);
      return `payment ${eventId}`;
    };
  }

  emailStep(): Step {
    const rng = this.rng;
    const messageId = `<m${rng.int(3)}@sender.example>`;
    const withFile = rng.chance(0.4);
    const which = rng.int(WEBHOOK_IDS.length);
    return async (w) => {
      const boxes = [...w.webhooks].filter(([, h]) => h.email);
      if (boxes.length === 0) return "email: no mailbox";
      const [webhookId, webhook] = boxes[which % boxes.length];
      const expected = w.receiveMail(webhookId, messageId, withFile, this.now());
      const reply = await acceptMessage(
        { sql: this.svc.db.sql, ledger: this.svc.ledger, clock: this.svc.clock, mailDomain: MAIL_DOMAIN },
        { raw: rawMail(webhook.email!, messageId, withFile), recipients: [webhook.email!], startedAt: 0 },
      );
      assert.equal(reply.code, expected, `mail ${messageId} to ${webhookId}: ${reply.message}`);
      return `mail ${messageId}${withFile ? " with a file" : ""} to ${webhookId}`;
    };
  }

  /** One round: a step for each of some wallets, run at once (their calls share ledger batches). */
  async round(step: number) {
    const rng = this.rng;
    const kinds = [
      () => this.kvStep(),
      () => this.webhookStep(),
      () => this.paymentStep(),
      () => this.emailStep(),
      () => keyStep(this),
      () => this.pauseStep(),
    ];
    const weights = [0.42, 0.14, 0.04, 0.15, 0.18, 0.07];
    const chosen = this.wallets.filter(() => rng.chance(0.7)).map((w) => {
      let roll = rng.next();
      const kind = weights.findIndex((p) => (roll -= p) < 0);
      return [w, kinds[kind === -1 ? 0 : kind]()] as const;
    });
    const done = await Promise.all(chosen.map(([w, run]) => run(w)));
    this.trace.push(`${step}: ${done.join(" | ")}`);
  }

  /** Between rounds: the clock moves, the scheduler runs a pass, and (once, late) wallets go idle. */
  async between(step: number, steps: number) {
    this.svc.clock.advance(this.rng.pick(CLOCK_MOVES));
    if (this.rng.chance(0.5)) {
      await runDueSchedules({ sql: this.svc.db.sql, ledger: this.svc.ledger, clock: this.svc.clock });
      for (const w of this.wallets) w.runSchedules(this.now());
      await this.compareBalances(`after the scheduler pass of step ${step}`);
    }
    if (step === steps - 5 && this.rng.chance(0.25)) {
      this.svc.clock.advance(TWO_YEARS_AND_A_DAY);
      await deactivateIdleWallets(this.svc.db.sql, this.svc.ledger, this.svc.clock);
      for (const w of this.wallets) w.deactivated = true;
      this.trace.push(`${step}: two years idle: every wallet deactivated`);
    }
  }

  async compareBalances(when: string) {
    const rows = await this.svc.db.sql<{ wallet_id: string; balance: number }[]>`
      select wallet_id, balance from wallets where wallet_id = any(${this.wallets.map((w) => w.hash)})`;
    const balances = new Map(rows.map((r) => [r.wallet_id, r.balance]));
    for (const w of this.wallets) assert.equal(balances.get(w.hash), w.balance, `balance ${when}`);
  }
}

/** A small message, with one attachment when asked. */
function rawMail(to: string, messageId: string, withFile: boolean): Uint8Array {
  const head = `From: Ann <ann@sender.example>\r\nTo: ${to}\r\nSubject: Sim\r\nMessage-ID: ${messageId}\r\n` +
    "MIME-Version: 1.0\r\n";
  const body = withFile
    ? 'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nHi\r\n' +
      '--b\r\nContent-Type: text/plain; name="f.txt"\r\nContent-Disposition: attachment; filename="f.txt"\r\n\r\n' +
      "file\r\n--b--\r\n"
    : "Content-Type: text/plain\r\n\r\nHi\r\n";
  return new TextEncoder().encode(head + body);
}
