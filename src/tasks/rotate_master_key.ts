// `deno task rotate-master-key`: re-wraps every wallet's data key from the current master key
// (MASTER_KEY, MASTER_KEY_FILE, the embedded file or the unsafe database one) to a new one
// (NEW_MASTER_KEY or NEW_MASTER_KEY_FILE). No event is touched. Each row records the key that
// wraps it, so an interrupted run is resumed by running it again with the same two keys; the old
// key's check value goes only once no row needs it. Instances keep running on the old key until
// restarted with the new one; a wallet re-wrapped meanwhile is refused by them, never misread.
import type { Sql } from "../db/connect.ts";
import { loadConfig } from "../config.ts";
import { openTaskDatabase } from "./task_database.ts";
import {
  MASTER_KEY_FILE_NAME,
  type MasterKey,
  MasterKeyError,
  parseMasterKey,
  readKeyFile,
  resolveMasterKey,
} from "../secrets/master_key.ts";
import { checkedMasterKeys, dropKeyCheck, recordKeyCheck, verifyMasterKey } from "../secrets/key_check.ts";
import { unwrapDataKey, wrapDataKey } from "../secrets/data_keys.ts";

/** Data keys re-wrapped per transaction. */
const ROWS_PER_PASS = 500;

export interface RotationReport {
  rewrapped: number;
  from: string;
  to: string;
}

/** Re-wraps every data key wrapped by `from` with `to`, in passes that each commit. */
export async function rotateMasterKey(sql: Sql, from: MasterKey, to: MasterKey): Promise<RotationReport> {
  if (from.id === to.id) throw new MasterKeyError(`The new master key is the current one (id "${to.id}")`);
  // A run resumed after the old key's check value went has nothing left to re-wrap.
  const known = await checkedMasterKeys(sql);
  if (known.includes(from.id) || !known.includes(to.id)) await verifyMasterKey(sql, from);
  await recordKeyCheck(sql, to);
  let rewrapped = 0;
  while (true) {
    const done = await sql.begin(async (tx) => {
      const rows = await tx<{ wallet_id: string; wrapped_key: string; master_key_id: string }[]>`
        select wallet_id, wrapped_key, master_key_id from wallet_keys
        where master_key_id = ${from.id} and wrapped_key is not null
        order by wallet_id limit ${ROWS_PER_PASS} for update skip locked`;
      if (rows.length === 0) return 0;
      const wrapped = await Promise.all(
        rows.map(async (row) => wrapDataKey(to, row.wallet_id, await unwrapDataKey(from, row))),
      );
      await tx`
        update wallet_keys k set wrapped_key = x.k, master_key_id = ${to.id}
        from unnest(${rows.map((r) => r.wallet_id)}::text[], ${wrapped}::text[]) as x(w, k)
        where k.wallet_id = x.w and k.master_key_id = ${from.id}`;
      return rows.length;
    });
    if (done === 0) break;
    rewrapped += done;
  }
  await dropKeyCheck(sql, from.id);
  return { rewrapped, from: from.id, to: to.id };
}

async function newMasterKey(): Promise<MasterKey> {
  const text = Deno.env.get("NEW_MASTER_KEY");
  const file = Deno.env.get("NEW_MASTER_KEY_FILE");
  if (text) return await parseMasterKey(text, "NEW_MASTER_KEY");
  if (file) {
    return await parseMasterKey(await readKeyFile(file, "NEW_MASTER_KEY_FILE"), "NEW_MASTER_KEY_FILE");
  }
  throw new MasterKeyError("No new master key: set NEW_MASTER_KEY or NEW_MASTER_KEY_FILE");
}

if (import.meta.main) {
  const config = loadConfig();
  const db = await openTaskDatabase();
  try {
    const to = await newMasterKey();
    const from = await resolveMasterKey(db.sql, config);
    const report = await rotateMasterKey(db.sql, from, to);
    console.log(
      `rotate-master-key: ${report.rewrapped} data keys re-wrapped from "${report.from}" to "${report.to}"`,
    );
    if (!config.masterKey && !config.masterKeyFile) {
      if (config.databaseUrl) {
        // The database no longer holds the key that opens it: that was the point of rotating.
        await db.sql`delete from service_settings where name = 'unsafe_master_key'`;
        console.log("the master key kept in the database is deleted: start the service with MASTER_KEY set");
      } else {
        const path = `${config.dataDir.replace(/\/+$/, "")}/${MASTER_KEY_FILE_NAME}`;
        const text = Deno.env.get("NEW_MASTER_KEY") ??
          await Deno.readTextFile(Deno.env.get("NEW_MASTER_KEY_FILE")!);
        await Deno.writeTextFile(`${path}.new`, text.trim() + "\n", { mode: 0o600 });
        await Deno.rename(`${path}.new`, path);
        console.log(`the new master key is written to "${path}"`);
      }
    } else {
      console.log("restart every instance with the new key as MASTER_KEY or MASTER_KEY_FILE");
    }
  } catch (error) {
    console.error(`Cannot rotate the master key: ${error instanceof Error ? error.message : error}`);
    await db.close();
    Deno.exit(1);
  }
  await db.close();
}
