// What runs through every round of `deno task ha` besides the KV load: a `* * * * *` schedule whose
// runs reach the receiver (each minute must arrive once), and a mail a second sent to the
// instances' SMTP ports in turn for a mailbox that forwards to the receiver (each accepted mail
// must arrive once). Counted per time window, so each round gets its own figures.
import nodemailer from "nodemailer";
import type { Haproxy } from "../cluster/haproxy.ts";
import type { HttpsReceiver } from "../cluster/receiver.ts";
import type { Instance } from "../cluster/instances.ts";
import { sendJson } from "../cluster/wallet.ts";

const MAIL_EVERY_MS = 1_000;
const MINUTE = 60_000;

export interface Traffic {
  /** Cron minutes in [from, to): planned, run, run more than once, missed. */
  cron(from: number, to: number): { planned: number; run: number; doubled: number; missed: number };
  /**
   * Mails sent in [from, to): accepted (250) or refused (451, no answer), and of the accepted:
   * delivered, missing, delivered again under the same webhook-id (a retry, which the receiver can
   * tell: the webhook contract is at least once) and doubled (two deliveries: a real double).
   */
  mail(from: number, to: number): {
    accepted: number;
    refused: number;
    delivered: number;
    redelivered: number;
    doubled: number;
    missing: number;
  };
  /** Stops sending mail until resume() (the audit and replay want a quiet database). */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export async function startTraffic(
  haproxy: Haproxy,
  { receiver, instances, tokens: [cronToken, mailToken] }: {
    receiver: HttpsReceiver;
    instances: Instance[];
    /** Two funded wallets: the schedule's and the mailbox's (both are charged). */
    tokens: string[];
  },
): Promise<Traffic> {
  const created = await sendJson(`${haproxy.url}/webhook`, cronToken, {
    method: "POST",
    body: {
      webhookId: "every-minute",
      url: `${receiver.url}/cron`,
      schedule: { cron: "* * * * *", timezone: "UTC" },
    },
  });
  if (created.status !== 200) {
    throw new Error(`POST /webhook (cron) answered ${created.status}: ${JSON.stringify(created.body)}`);
  }
  const cronFrom = Math.ceil((Date.now() + 1) / MINUTE) * MINUTE;

  const mailbox = await sendJson(`${haproxy.url}/webhook`, mailToken, {
    method: "POST",
    body: { webhookId: "mail", url: `${receiver.url}/mail` },
  });
  if (mailbox.status !== 200) throw new Error(`POST /webhook (mail) answered ${mailbox.status}`);
  const sent: { subject: string; at: number; accepted: boolean }[] = [];
  let running = true;
  let paused = false;
  const sender = (async () => {
    for (let n = 0; running; n++) {
      if (paused) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      const instance = instances[n % instances.length];
      const subject = `ha mail ${n} ${crypto.randomUUID().slice(0, 8)}`;
      const at = Date.now();
      const transport = nodemailer.createTransport({
        host: "127.0.0.1",
        port: instance.smtpPort,
        secure: false,
        ignoreTLS: true,
        connectionTimeout: 5_000,
        socketTimeout: 10_000,
      });
      let accepted = false;
      try {
        const info = await transport.sendMail({
          from: "ann@sender.example",
          to: mailbox.body.email,
          subject,
          text: "hi",
        });
        accepted = String(info.response).startsWith("250");
      } catch { /* 451 while the database is away, or no answer: not accepted, so not owed */ }
      transport.close();
      sent.push({ subject, at, accepted });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, at + MAIL_EVERY_MS - Date.now())));
    }
  })();

  const deliveries = () =>
    receiver.at("/mail").map((r) => ({
      subject: String(JSON.parse(r.body).subject),
      id: r.headers["webhook-id"],
    }));
  return {
    cron(from, to) {
      const runs = receiver.at("/cron").map((r) => Date.parse(JSON.parse(r.body).scheduledFor));
      const planned: number[] = [];
      for (let m = Math.max(cronFrom, Math.ceil(from / MINUTE) * MINUTE); m < to; m += MINUTE) {
        planned.push(m);
      }
      const count = (m: number) => runs.filter((r) => r === m).length;
      return {
        planned: planned.length,
        run: planned.filter((m) => count(m) >= 1).length,
        doubled: planned.filter((m) => count(m) > 1).length,
        missed: planned.filter((m) => count(m) === 0).length,
      };
    },
    mail(from, to) {
      const delivered = deliveries();
      const mine = sent.filter((s) => s.at >= from && s.at < to);
      const accepted = mine.filter((s) => s.accepted);
      const of = (subject: string) => delivered.filter((d) => d.subject === subject);
      return {
        accepted: accepted.length,
        refused: mine.length - accepted.length,
        delivered: accepted.filter((s) => of(s.subject).length >= 1).length,
        redelivered: mine.filter((s) => {
          const ids = of(s.subject).map((d) => d.id);
          return ids.length > new Set(ids).size;
        }).length,
        doubled: mine.filter((s) => new Set(of(s.subject).map((d) => d.id)).size > 1).length,
        missing: accepted.filter((s) => of(s.subject).length === 0).length,
      };
    },
    pause: () => paused = true,
    resume: () => paused = false,
    async stop() {
      running = false;
      await sender;
    },
  };
}
