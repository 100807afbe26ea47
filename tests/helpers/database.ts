// Direct access to a running service's database for what no API does yet, such as queueing a
// delivery the way the email receiver will. The embedded database belongs to one process, so on it
// the service is stopped for the work and started again after; Postgres is opened alongside.
import { type Database, openDatabase } from "../../src/db/connect.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { createServiceLedger } from "../../src/service_ledger.ts";
import { systemClock } from "../../src/clock.ts";
import type { Service } from "./service.ts";

export async function withDatabase<T>(service: Service, work: (db: Database, ledger: Ledger) => Promise<T>) {
  const { DATABASE_URL: databaseUrl, DATA_DIR: dataDir = "" } = service.databaseEnv;
  if (!databaseUrl) await service.stop();
  const db = await openDatabase({ databaseUrl, dataDir, maxConnections: 2 });
  try {
    return await work(db, createServiceLedger(db.sql, systemClock));
  } finally {
    await db.close();
    if (!databaseUrl) await service.start();
  }
}
