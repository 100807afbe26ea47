// The whole service inside the test process, with a clock the test moves: for behaviour that
// depends on time (expiry, deactivation). Requests go straight to the app, no network.
import { type Database, openDatabase } from "../../src/db/connect.ts";
import { migrate } from "../../src/db/migrate.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { createServiceLedger, type ServiceLedgerOptions } from "../../src/service_ledger.ts";
import { offsetClock } from "../../src/clock.ts";
import { databaseOptions, parseConfig } from "../../src/config.ts";
import { createApp } from "../../src/http/app.ts";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../src/http/env.ts";
import { freshDatabase } from "./service.ts";
import { openSecrets, type Secrets } from "../../src/secrets/mod.ts";

export interface InProcessService {
  /** The app itself, for what only it knows (its routes). */
  app: OpenAPIHono<AppEnv>;
  db: Database;
  ledger: Ledger;
  /** The master key and data keys the ledger seals events with (replay opens them with `keys`). */
  secrets: Secrets;
  clock: ReturnType<typeof offsetClock>;
  request(
    method: string,
    path: string,
    init?: { token?: string; body?: string; headers?: Record<string, string> },
  ): Promise<{ status: number; text: string; headers: Headers }>;
  newToken(): Promise<string>;
  close(): Promise<void>;
}

let addresses = 0;

export async function inProcessService(
  env: Record<string, string> = {},
  ledgerOptions: ServiceLedgerOptions = {},
): Promise<InProcessService> {
  const database = await freshDatabase();
  const config = parseConfig({
    SMTP_PORT: "0",
    TRUST_PROXY: "1",
    LOG_REQUESTS: "0",
    ...database.env,
    ...env,
  });
  if ("error" in config) throw new Error(config.error);
  const db = await openDatabase(databaseOptions(config));
  await migrate(db.direct);
  const clock = offsetClock();
  const secrets = await openSecrets(db.sql, config);
  const ledger = createServiceLedger(db.sql, clock, {
    validateEvents: true,
    sealer: secrets.sealer,
    ...ledgerOptions,
  });
  const app = createApp({ sql: db.sql, ledger, clock, config });

  async function request(
    method: string,
    path: string,
    init: { token?: string; body?: string; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token) headers["x-token"] = init.token;
    const res = await app.fetch(new Request(`http://service${path}`, { method, headers, body: init.body }), {
      remoteAddr: { hostname: "127.0.0.1" },
    });
    return { status: res.status, text: await res.text(), headers: res.headers };
  }

  return {
    app,
    db,
    ledger,
    secrets,
    clock,
    request,
    async newToken() {
      addresses++;
      const res = await request("POST", "/token", {
        body: "token=new",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-forwarded-for": `192.0.2.${addresses}`,
        },
      });
      if (res.status !== 200) throw new Error(`POST /token answered ${res.status}: ${res.text}`);
      return res.text;
    },
    async close() {
      await db.close();
      await database.drop();
    },
  };
}
