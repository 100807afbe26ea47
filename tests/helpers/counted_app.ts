// The service's app in the test process on a fresh database, with the database handle of the edge
// (authentication, the handlers' own reads) counting its queries and the ledger counting its
// batches: for what must not cost a query of its own.
import { type Database, openDatabase, type Sql } from "../../src/db/connect.ts";
import { migrate } from "../../src/db/migrate.ts";
import { createServiceLedger } from "../../src/service_ledger.ts";
import { systemClock } from "../../src/clock.ts";
import { databaseOptions, parseConfig } from "../../src/config.ts";
import { createApp } from "../../src/http/app.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { freshDatabase } from "./service.ts";

export interface CountedApp {
  ledger: Ledger;
  db: Database;
  /** A request from `from` (X-Forwarded-For: the app trusts it). */
  fetch(path: string, init: RequestInit & { from: string }): Promise<Response>;
  /** Queries the edge made so far. */
  queries(): number;
  /** Ledger batches committed so far, and the calls in them. */
  batches(): { batches: number; calls: number };
  close(): Promise<void>;
}

/** `sql` that counts the queries made through it (tagged templates). */
function countingSql(sql: Sql, count: () => void): Sql {
  return new Proxy(sql, {
    apply(target, self, args) {
      if (Array.isArray(args[0]) && "raw" in args[0]) count();
      return Reflect.apply(target, self, args);
    },
  });
}

export async function countedApp(env: Record<string, string> = {}): Promise<CountedApp> {
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
  let queries = 0;
  const batches = { batches: 0, calls: 0 };
  const ledger = createServiceLedger(db.sql, systemClock, {
    validateEvents: true,
    onBatch: (size) => {
      batches.batches++;
      batches.calls += size;
    },
  });
  const sql = countingSql(db.sql, () => queries++);
  const app = createApp({ sql, ledger, clock: systemClock, config });
  return {
    ledger,
    db,
    fetch(path, { from, ...init }) {
      const headers = new Headers(init.headers);
      headers.set("x-forwarded-for", from);
      return Promise.resolve(
        app.fetch(new Request(`http://service${path}`, { ...init, headers }), {
          remoteAddr: { hostname: "127.0.0.1" },
        }),
      );
    },
    queries: () => queries,
    batches: () => ({ ...batches }),
    async close() {
      await db.close();
      await database.drop();
    },
  };
}
