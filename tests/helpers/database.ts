// Direct access to a running service's database, for what no API shows or changes: the events
// table refusing updates, a projection tampered with to see the audit catch it. The embedded
// database belongs to one process, so on it the service is stopped for the work and started again
// after; Postgres is opened alongside.
import { type Database, openDatabase } from "../../src/db/connect.ts";
import { openOptionsOf, type Service } from "./service.ts";

export async function withDatabase<T>(service: Service, work: (db: Database) => Promise<T>): Promise<T> {
  const databaseUrl = service.databaseEnv.DATABASE_URL;
  if (!databaseUrl) await service.stop();
  const db = await openDatabase({ ...openOptionsOf(service.databaseEnv), maxConnections: 1 });
  try {
    return await work(db);
  } finally {
    await db.close();
    if (!databaseUrl) await service.start();
  }
}
