// Direct access to a database, for what no API shows or changes: a running service's (the events
// table refusing updates, a projection tampered with to see the audit catch it; the embedded
// database belongs to one process, so on it the service is stopped for the work and started again
// after, Postgres is opened alongside), or a fresh one of the run's kind with no service.
import { type Database, openDatabase, type Sql } from "../../src/db/connect.ts";
import { freshDatabase, openOptionsOf, type Service } from "./service.ts";

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

/** Work on a fresh, empty database of the run's kind (no service), dropped after. */
export async function withFreshDatabase(work: (sql: Sql) => Promise<void>): Promise<void> {
  const database = await freshDatabase();
  const db = await openDatabase({ ...openOptionsOf(database.env), maxConnections: 2 });
  try {
    await work(db.sql);
  } finally {
    await db.close();
    await database.drop();
  }
}
