// The background work through a database outage: the delivery worker and the scheduler run in the
// test process with a clock the test moves, their database behind the fault proxy. An email
// delivery whose retry comes due during the outage, and a scheduled run planned during it, both
// happen once the database is back, with no restart; each loop logs the outage once, not at every
// try; and the ledger audits clean.
import assert from "node:assert/strict";
import { type Database, openDatabase } from "../src/db/connect.ts";
import { migrate } from "../src/db/migrate.ts";
import type { Ledger } from "../src/ledger/ledger.ts";
import { createServiceLedger } from "../src/service_ledger.ts";
import { deliveryChannels } from "../src/delivery_channels.ts";
import { offsetClock } from "../src/clock.ts";
import { databaseOptions, parseConfig } from "../src/config.ts";
import { createApp } from "../src/http/app.ts";
import { startDeliveryWorker } from "../src/webhooks/delivery_worker.ts";
import { startScheduler } from "../src/schedules/scheduler.ts";
import { startSmtpReceiver } from "../src/email/smtp_server.ts";
import { auditLedger } from "../src/tasks/audit.ts";
import { MAX_BACKOFF_MS } from "../src/backoff.ts";
import { embedded, freshDatabase } from "./helpers/service.ts";
import { type FaultProxy, startFaultProxy } from "./helpers/fault_proxy.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { eventually } from "./helpers/wait.ts";

const DATABASE_TIMEOUT_MS = 1_500;
const OUTAGE_MS = 3_000;
/** After the database returns: one backoff wait at most, then a poll. */
const RESUME_BOUND_MS = MAX_BACKOFF_MS + 2_000;

/** Collects the service's log lines (JSON on stdout and stderr) while `work` runs. */
async function capturingLog<T>(work: (lines: string[]) => Promise<T>): Promise<T> {
  const lines: string[] = [];
  const { log, error } = console;
  console.log = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  console.error = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  try {
    return await work(lines);
  } finally {
    Object.assign(console, { log, error });
  }
}

interface Harness {
  db: Database;
  ledger: Ledger;
  clock: ReturnType<typeof offsetClock>;
  proxy: FaultProxy;
  receiver: Receiver;
  smtpPort: number;
  /** A request to the app in this process; fails the test unless it is answered 200. */
  request(method: string, path: string, init?: { token?: string; body?: unknown }): Promise<string>;
  close(): Promise<void>;
}

/** The service's parts in this process, their database behind the fault proxy. */
async function harness(): Promise<Harness> {
  const database = await freshDatabase();
  const direct = new URL(database.env.DATABASE_URL);
  const proxy = startFaultProxy({ hostname: direct.hostname, port: Number(direct.port || 5432) });
  const config = parseConfig({
    SMTP_PORT: "0",
    UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
    ...database.env,
    DATABASE_URL: proxy.urlFor(database.env.DATABASE_URL),
  });
  if ("error" in config) throw new Error(config.error);
  const db = await openDatabase({ ...databaseOptions(config), connectTimeoutMs: DATABASE_TIMEOUT_MS });
  await migrate(db.direct);
  const clock = offsetClock();
  const ledger = createServiceLedger(db.sql, clock, { deadlineMs: DATABASE_TIMEOUT_MS });
  const app = createApp({ sql: db.sql, ledger, clock, config });
  // The first delivery to /mail fails, so it is retried; everything else succeeds.
  const receiver = startReceiver((request) =>
    new Response("", { status: request.path === "/mail" && receiver.received.length === 1 ? 500 : 200 })
  );
  const smtp = await startSmtpReceiver({
    sql: db.sql,
    ledger,
    clock,
    mailDomain: config.mailDomain,
    port: 0,
    hostname: "127.0.0.1",
  });
  return {
    db,
    ledger,
    clock,
    proxy,
    receiver,
    smtpPort: smtp.port,
    async request(method, path, init = {}) {
      const form = typeof init.body === "string";
      const res = await app.fetch(
        new Request(`http://service${path}`, {
          method,
          headers: {
            ...(init.token ? { "x-token": init.token } : {}),
            "content-type": form ? "application/x-www-form-urlencoded" : "application/json",
          },
          body: form ? init.body as string : JSON.stringify(init.body),
        }),
        { remoteAddr: { hostname: "127.0.0.1" } },
      );
      const text = await res.text();
      assert.equal(res.status, 200, `${method} ${path}: ${text}`);
      return text;
    },
    async close() {
      await smtp.stop();
      await receiver.close();
      await db.close();
      await proxy.close();
      await database.drop();
    },
  };
}

/**
 * A mailbox whose first delivery fails, and a schedule due every minute; then an outage during which
 * the delivery's retry and a scheduled run come due; both must happen once the database is back.
 */
async function outageScenario(h: Harness) {
  const token = await h.request("POST", "/token", { body: "token=new" });
  const created = await h.request("POST", "/webhook", {
    token,
    body: { url: `${h.receiver.url}/mail`, webhookId: "mail" },
  });
  const mailbox = JSON.parse(created).email;
  // The clock 50 s into a minute: the next run of "* * * * *" is 10 s away.
  const now = h.clock.now().getTime();
  h.clock.advance(Math.ceil(now / 60_000) * 60_000 - 10_000 - now);
  const schedule = { cron: "* * * * *", timezone: "UTC" };
  await h.request("POST", "/webhook", {
    token,
    body: { url: `${h.receiver.url}/cron`, webhookId: "cron", schedule },
  });

  // An email whose first delivery fails (500): it is retried 5 s later, by the clock.
  const sent = await sendMail({ smtpPort: h.smtpPort }, { to: mailbox, subject: "Before", text: "x" });
  assert.equal(sent.code, 250, sent.response);
  const [first] = await h.receiver.waitFor(1);
  assert.equal(first.path, "/mail");
  // Recorded too (else its claim would hold it for the 60 s lease): the attempt is in the call log.
  await eventually("the first attempt in the call log", async () => {
    const logs = JSON.parse(await h.request("GET", "/token/logs?type=webhook-delivery", { token })).logs;
    return logs.length > 0 ? true : undefined;
  });

  // The outage: the retry and the scheduled run come due while Postgres is away.
  h.proxy.refuse();
  h.proxy.cut();
  h.clock.advance(20_000);
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
  assert.equal(h.receiver.received.length, 1, "Nothing is delivered while the database is out");
  h.proxy.accept();
  const back = performance.now();

  const arrived = await h.receiver.waitFor(3, RESUME_BOUND_MS + 5_000);
  const resumedAfter = Math.max(...arrived.map((r) => r.at)) - back;
  assert.ok(resumedAfter <= RESUME_BOUND_MS, `Work resumed only ${Math.round(resumedAfter)} ms after`);
  const retried = arrived.find((r, i) => i > 0 && r.path === "/mail");
  assert.ok(retried, "The email delivery was tried again");
  assert.equal(retried.headers["webhook-id"], first.headers["webhook-id"], "The same delivery");
  const run = arrived.find((r) => r.path === "/cron");
  assert.ok(run, "The scheduled run planned during the outage fired");
  assert.equal(JSON.parse(run.body).type, "scheduled_webhook_run");
}

Deno.test({
  name: "database outage: the delivery worker and the scheduler back off, log it once and resume",
  ignore: embedded, // The embedded PGlite runs in the process: there is no connection to cut.
  sanitizeOps: false, // smtp-server and postgres.js keep timers of their own until they close.
  sanitizeResources: false,
  async fn() {
    const h = await harness();
    try {
      await capturingLog(async (lines) => {
        const worker = startDeliveryWorker({
          sql: h.db.sql,
          ledger: h.ledger,
          clock: h.clock,
          channels: deliveryChannels({
            sql: h.db.sql,
            signing: { serverSecret: "outage-test-secret-0123456789", publicUrl: "http://service" },
            allowPrivate: true,
          }),
          retryScale: 1,
        });
        const scheduler = startScheduler({ sql: h.db.sql, ledger: h.ledger, clock: h.clock });
        try {
          await outageScenario(h);
        } finally {
          await scheduler.stop();
          await worker.stop();
        }
        const count = (text: string) => lines.filter((line) => line.includes(text)).length;
        assert.equal(count("delivery poll: database unavailable"), 1, "The worker logged the outage once");
        assert.equal(
          count("scheduler pass: database unavailable"),
          1,
          "The scheduler logged the outage once",
        );
        assert.equal(count("delivery poll: database reachable again"), 1);
        assert.equal(count("scheduler pass: database reachable again"), 1);
      });
      const audit = await auditLedger(h.db.sql);
      assert.deepEqual(audit.mismatches, [], "The audit is clean");
    } finally {
      await h.close();
    }
  },
});
