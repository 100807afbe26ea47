// The secrets of the service: the master key, the wallets' data keys, and the sealing of events.
// `openSecrets` is what a process (the service, replay, erase) calls once at start.
import type { Sql } from "../db/connect.ts";
import { type MasterKey, type MasterKeySource, resolveMasterKey } from "./master_key.ts";
import { verifyMasterKey } from "./key_check.ts";
import { DataKeys } from "./data_keys.ts";
import { createEventSealer, type EventSealer } from "./sealer.ts";

export { MasterKeyError } from "./master_key.ts";
export type { EventSealer } from "./sealer.ts";
export { DataKeys } from "./data_keys.ts";

export interface Secrets {
  master: MasterKey;
  keys: DataKeys;
  sealer: EventSealer;
}

/** The master key checked against the database, the data keys and the sealer built on it. */
export async function openSecrets(
  sql: Sql,
  source: MasterKeySource,
  warn?: (message: string) => void,
): Promise<Secrets> {
  const master = await resolveMasterKey(sql, source, warn);
  await verifyMasterKey(sql, master);
  const keys = new DataKeys(sql, master);
  return { master, keys, sealer: createEventSealer(keys) };
}
