// Opens the service's database for an operations task, with the service's configuration.
import { databaseOptions, loadConfig } from "../config.ts";
import { type Database, openDatabase } from "../db/connect.ts";
import { migrate } from "../db/migrate.ts";

export async function openTaskDatabase(options: { maxConnections?: number } = {}): Promise<Database> {
  const config = loadConfig();
  try {
    const db = await openDatabase({ ...databaseOptions(config), ...options });
    await migrate(db.direct);
    return db;
  } catch (error) {
    const hint = config.databaseUrl
      ? ""
      : " (the embedded database can only be opened while the service is stopped)";
    console.error(`Cannot open the database${hint}: ${error instanceof Error ? error.message : error}`);
    Deno.exit(2);
  }
}
