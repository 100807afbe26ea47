// Wiring only: configuration, database, ledger, HTTP server, background work, clean shutdown.
import { loadConfig } from "./config.ts";
import { openDatabase } from "./db/connect.ts";
import { migrate } from "./db/migrate.ts";
import { createLedger } from "./ledger/ledger.ts";
import { createApp } from "./http/app.ts";
import { systemClock } from "./clock.ts";
import { startSweeper } from "./sweeper.ts";

function log(level: string, message: string, fields: Record<string, unknown> = {}) {
  console.log(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }));
}

const config = loadConfig();
const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
const applied = await migrate(db.sql);
if (applied.length) log("info", "migrations applied", { applied });

const clock = systemClock;
const ledger = createLedger(db.sql, clock);
const services = { sql: db.sql, ledger, clock, config };
const app = createApp(services);
const sweeper = startSweeper(db.sql, clock);

const shutdown = new AbortController();
const server = Deno.serve({
  port: config.port,
  hostname: config.hostname,
  signal: shutdown.signal,
  onListen: ({ hostname, port }) =>
    log("info", "listening", {
      url: `http://${hostname}:${port}`,
      database: db.embedded ? "embedded" : "postgres",
    }),
}, (request, info) => app.fetch(request, { remoteAddr: info.remoteAddr as Deno.NetAddr }));

async function stop(signal: string) {
  log("info", "shutting down", { signal });
  shutdown.abort();
  await server.finished;
  await sweeper.stop();
  await db.close();
  log("info", "stopped");
  Deno.exit(0);
}
Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
