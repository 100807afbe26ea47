// The master key and data keys of an operations task (replay, erase), from the service's own
// configuration; a missing or wrong master key ends the task with a clear message (exit 2).
import { loadConfig } from "../config.ts";
import type { Database } from "../db/connect.ts";
import { openSecrets, type Secrets } from "../secrets/mod.ts";

export async function openTaskSecrets(db: Database): Promise<Secrets> {
  try {
    return await openSecrets(db.sql, loadConfig(), (message) => console.error(`warning: ${message}`));
  } catch (error) {
    console.error(`Cannot open the master key: ${error instanceof Error ? error.message : error}`);
    await db.close();
    Deno.exit(2);
  }
}
