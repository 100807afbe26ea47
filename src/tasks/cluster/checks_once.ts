// What must happen once, whichever instance does it: a `* * * * *` schedule fires once a minute
// for three minutes, and mail sent to the three SMTP ports is delivered and charged once each.
import nodemailer from "nodemailer";
import type { Haproxy } from "./haproxy.ts";
import type { HttpsReceiver } from "./receiver.ts";
import type { Instance } from "./instances.ts";
import type { Check } from "./checks_limits.ts";
import { ledgerOf, newWallet, sendJson } from "./wallet.ts";
import { sleep } from "../bench/system.ts";

const MINUTE = 60_000;
export const CRON_MINUTES = 3;
/** A schedule made closer than this to a minute is made after it, so its first minute is certain. */
const CRON_MARGIN_MS = 3_000;
/** Time after the last planned minute for its run to arrive, and for a duplicate to show. */
const RUN_WAIT_MS = 30_000;
const SETTLE_MS = 3_000;
export const MAILS_PER_PORT = 10;

export interface RunningCron {
  planned: number[];
  /** Waits for the last planned minute, deletes the schedule and checks the runs. */
  finish(): Promise<Check<Record<string, unknown>>>;
}

export async function startCron(haproxy: Haproxy, receiver: HttpsReceiver, instanceUrl: string) {
  const token = await newWallet(instanceUrl);
  const untilMinute = MINUTE - (Date.now() % MINUTE);
  if (untilMinute < CRON_MARGIN_MS) await sleep(untilMinute + 100);
  const createdAt = Date.now();
  const created = await sendJson(`${haproxy.url}/webhook`, token, {
    method: "POST",
    body: {
      webhookId: "every-minute",
      url: `${receiver.url}/cron`,
      schedule: { cron: "* * * * *", timezone: "UTC" },
    },
  });
  if (created.status !== 200) throw new Error(`POST /webhook answered ${created.status}: ${created.body}`);
  const first = Math.ceil((createdAt + 1) / MINUTE) * MINUTE;
  const planned = Array.from({ length: CRON_MINUTES }, (_, i) => first + i * MINUTE);
  const finish = async () => {
    await receiver.waitFor("/cron", CRON_MINUTES, planned.at(-1)! - Date.now() + RUN_WAIT_MS).catch(() => {});
    const deleted = await sendJson(`${haproxy.url}/webhook/every-minute`, token, { method: "DELETE" });
    await sleep(SETTLE_MS);
    const runs = receiver.at("/cron").map((r) => JSON.parse(r.body));
    const fired = runs.map((run) => Date.parse(run.scheduledFor)).sort((a, b) => a - b);
    const lateMs = runs.map((run) => Date.parse(run.executedAt) - Date.parse(run.scheduledFor));
    const { entries } = await ledgerOf(haproxy.url, token);
    const figures = {
      planned: planned.map((at) => new Date(at).toISOString()),
      runs: runs.length,
      distinctMinutes: new Set(fired).size,
      maxLateMs: Math.max(0, ...lateMs),
      charges: entries.filter((e) => e.type === "debit" && e.endpoint === "scheduled").length,
    };
    const ok = deleted.status === 200 && JSON.stringify(fired) === JSON.stringify(planned) &&
      figures.charges === CRON_MINUTES;
    const line = `cron once: ${runs.length} runs for the ${CRON_MINUTES} planned minutes ` +
      `${figures.planned.map((p) => p.slice(11, 16)).join(", ")} (${figures.distinctMinutes} distinct, ` +
      `at most ${figures.maxLateMs} ms late), ${figures.charges} charges`;
    return { ok, line, figures };
  };
  return { planned, finish } satisfies RunningCron;
}

async function sendTen(instance: Instance, to: string, from: number): Promise<number> {
  const transport = nodemailer.createTransport({
    host: "127.0.0.1",
    port: instance.smtpPort,
    secure: false,
    ignoreTLS: true,
    connectionTimeout: 10_000,
  });
  let accepted = 0;
  try {
    for (let i = from; i < from + MAILS_PER_PORT; i++) {
      const info = await transport.sendMail({
        from: "ann@sender.example",
        to,
        subject: `Mail ${i}`,
        text: "hi",
      });
      if (String(info.response).startsWith("250")) accepted++;
    }
  } finally {
    transport.close();
  }
  return accepted;
}

/** Ten messages to each instance's SMTP port for one mailbox: 30 deliveries, 30 charges. */
export async function mailOnce(haproxy: Haproxy, receiver: HttpsReceiver, instances: Instance[]) {
  const token = await newWallet(`http://127.0.0.1:${instances[0].httpPort}`);
  const created = await sendJson(`${haproxy.url}/webhook`, token, {
    method: "POST",
    body: { webhookId: "mail", url: `${receiver.url}/mail` },
  });
  if (created.status !== 200) throw new Error(`POST /webhook answered ${created.status}: ${created.body}`);
  const sent = instances.length * MAILS_PER_PORT;
  const accepted = await Promise.all(
    instances.map((instance, i) => sendTen(instance, created.body.email, i * MAILS_PER_PORT)),
  );
  await receiver.waitFor("/mail", sent, 60_000).catch(() => {});
  await sleep(SETTLE_MS);
  const deliveries = receiver.at("/mail");
  const { entries } = await ledgerOf(haproxy.url, token);
  const charges = entries.filter((e) => e.type === "debit" && e.endpoint === "email");
  const figures = {
    sent,
    accepted: accepted.reduce((a, b) => a + b, 0),
    deliveries: deliveries.length,
    distinctDeliveries: new Set(deliveries.map((d) => d.headers["webhook-id"])).size,
    distinctSubjects: new Set(deliveries.map((d) => JSON.parse(d.body).subject)).size,
    charges: charges.length,
    credits: -charges.reduce((sum, e) => sum + e.amount, 0),
  };
  const ok = figures.accepted === sent && figures.deliveries === sent &&
    figures.distinctDeliveries === sent &&
    figures.distinctSubjects === sent && figures.charges === sent;
  const line = `mail once: ${sent} messages, ${MAILS_PER_PORT} to each SMTP port: ${figures.accepted} ` +
    `accepted, ${figures.deliveries} deliveries (${figures.distinctDeliveries} distinct), ` +
    `${figures.charges} charges (${figures.credits} credits)`;
  return { ok, line, figures } satisfies Check<typeof figures>;
}
