// Wiring only: configuration, database, ledger, HTTP server, background work, clean shutdown.
import { databaseOptions, loadConfig } from "./config.ts";
import { openDatabase } from "./db/connect.ts";
import { migrate } from "./db/migrate.ts";
import { createServiceLedger } from "./service_ledger.ts";
import { createApp } from "./http/app.ts";
import { startHttpServer } from "./http/server.ts";
import { systemClock } from "./clock.ts";
import { preparePartitions, startSweeper } from "./sweeper.ts";
import { startDeactivationSweep } from "./wallets/deactivation.ts";
import { createAlertMailer } from "./alerts/mailer.ts";
import { deliveryChannels } from "./delivery_channels.ts";
import { linkSigning, startDeliveryWorker } from "./webhooks/mod.ts";
import { ensureServiceFile } from "./attachments/store.ts";
import { SAMPLE_ATTACHMENT } from "./attachments/sample_pdf.ts";
import { startScheduler } from "./schedules/scheduler.ts";
import { startSmtpReceiver } from "./email/smtp_server.ts";
import { describeError, log, logError } from "./log.ts";
import { BatchStats, STATS_INTERVAL_MS } from "./ledger/batch_stats.ts";
import { openSecrets } from "./secrets/mod.ts";
import { startServiceMetrics } from "./service_metrics.ts";

const config = loadConfig();
// Before anything records: off (no listener, nothing recorded) unless METRICS_PORT is set.
const metrics = await startServiceMetrics(config);
const db = await openDatabase({ ...databaseOptions(config), connectTimeoutMs: config.databaseTimeoutMs });
// Past a transaction-mode pooler, over DATABASE_DIRECT_URL.
const applied = await migrate(db.direct);
if (applied.length) log("info", "migrations applied", { applied });
// A missing or wrong master key stops the start here, never a silent empty read later.
const secrets = await openSecrets(db.sql, config, (message) => log("warn", message)).catch(async (error) => {
  log("error", "cannot open the master key", { error: describeError(error) });
  await db.close();
  Deno.exit(1);
});
if (config.allowPrivateWebhooks) {
  log(
    "warn",
    "UNSAFE_ALLOW_PRIVATE_WEBHOOKS is on: webhooks may call http:// and private or loopback " +
      "addresses; for local testing only",
  );
}

const clock = systemClock;
// Without them rows still land in the catch-all partitions; the sweep tries again.
await preparePartitions(db.sql, clock.now()).catch((error) => logError("cannot create partitions", error));
await ensureServiceFile(db.sql, SAMPLE_ATTACHMENT, clock.now());
// After the commit that queued deliveries, the worker (started below) looks for the rows at once.
const deliveryWakeUp = { wake: () => {} };
const batchStats = new BatchStats();
const ledger = createServiceLedger(db.sql, clock, {
  onBatch: (_size, timing) => (batchStats.record(timing), metrics.batch(timing)),
  maxBatch: config.ledgerMaxBatch,
  deadlineMs: config.databaseTimeoutMs,
  validateEvents: config.ledgerValidateEvents,
  sealer: secrets.sealer,
  onDeliveryQueued: () => deliveryWakeUp.wake(),
});
const services = { sql: db.sql, ledger, clock, config };
metrics.watchDatabase(db.sql, clock);
const app = createApp(services);
const sweeper = startSweeper(db.sql, clock);
// One "ledger" line every STATS_INTERVAL_MS while calls are billed: batch sizes, queue and work times.
const statsTimer = setInterval(() => {
  const summary = batchStats.take();
  if (summary) log("info", "ledger", { ...summary });
}, STATS_INTERVAL_MS);
const deactivation = startDeactivationSweep(db.sql, { ledger, clock });
const deliveries = startDeliveryWorker({
  sql: db.sql,
  ledger,
  clock,
  channels: deliveryChannels({
    sql: db.sql,
    signing: await linkSigning(db.sql, config),
    allowPrivate: config.allowPrivateWebhooks,
    mailer: createAlertMailer(config.smtpRelayUrl, config.alertEmailFrom),
  }),
  retryScale: config.deliveryRetryScale,
  health: config.webhookHealth,
  slots: config.deliverySlots,
});
deliveryWakeUp.wake = deliveries.wake;
// Every instance runs it: the database decides which one handles each planned time.
const scheduler = startScheduler({ sql: db.sql, ledger, clock, health: config.webhookHealth });

// Mail comes in only once everything that accepts it is running. SMTP_PORT=0 turns it off.
const smtp = config.smtpPort === 0 ? undefined : await startSmtpReceiver({
  sql: db.sql,
  ledger,
  clock,
  mailDomain: config.mailDomain,
  attachmentStorageLimit: config.attachmentStoragePerWallet,
  port: config.smtpPort,
  hostname: config.hostname,
  tls: config.smtpTls,
  limits: config.smtpLimits,
}).catch((error) => {
  log("error", "cannot start the SMTP receiver", {
    error: describeError(error),
  });
  Deno.exit(1);
});
if (smtp) {
  log("info", "smtp listening", {
    port: smtp.port,
    mailDomain: config.mailDomain,
    starttls: !!config.smtpTls,
  });
}

const server = await startHttpServer(app.fetch, {
  port: config.port,
  hostname: config.hostname,
  limits: config.http,
});
log("info", "listening", {
  url: `http://${config.hostname}:${server.port}`,
  database: db.embedded ? "embedded" : "postgres",
});

let stopping = false;
async function stop(signal: string) {
  // A second signal during the drain ends the drain; the shutdown goes on as it was.
  if (stopping) return void server.drain(0);
  stopping = true;
  log("info", "shutting down", { signal, drainMs: config.shutdownDrainMs });
  // /readyz answers 503 while requests are still served, until the balancer has taken us out.
  if (config.shutdownDrainMs > 0) await server.drain(config.shutdownDrainMs);
  // Stops accepting and lets the requests in flight finish before the database closes.
  await server.shutdown();
  // Sessions finish and accepted mail commits before the database closes.
  await smtp?.stop();
  // Runs in hand commit (with their outbox rows) before the delivery worker stops.
  await scheduler.stop();
  await deliveries.stop();
  await sweeper.stop();
  await deactivation.stop();
  clearInterval(statsTimer);
  await metrics.stop();
  await db.close();
  log("info", "stopped");
  Deno.exit(0);
}
Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
