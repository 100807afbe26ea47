// The key check value: a known text sealed by each master key that wraps data keys, kept in
// service_settings. At start the configured key must open its own; a key with no check value while
// another key has one is the wrong key, refused at once rather than read as empty.
import type { Sql } from "../db/connect.ts";
import { openText, sealText } from "./aes_gcm.ts";
import { type MasterKey, MasterKeyError } from "./master_key.ts";

const PREFIX = "master_key_check:";
const CHECK_TEXT = "credit-api master key check";

function settingOf(id: string): string {
  return `${PREFIX}${id}`;
}

/** The ids of the master keys that have a check value in this database. */
export async function checkedMasterKeys(sql: Sql): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select name from service_settings where name like ${PREFIX + "%"} order by name`;
  return rows.map((r) => r.name.slice(PREFIX.length));
}

/** Records the key's check value (first start, or the new key of a rotation). */
export async function recordKeyCheck(sql: Sql, master: MasterKey): Promise<void> {
  const value = await sealText(master.key, CHECK_TEXT, settingOf(master.id));
  await sql`insert into service_settings (name, value) values (${settingOf(master.id)}, ${value})
    on conflict (name) do nothing`;
}

/** Drops a key's check value once no data key is wrapped by it (the end of a rotation). */
export async function dropKeyCheck(sql: Sql, id: string): Promise<void> {
  await sql`delete from service_settings where name = ${settingOf(id)}`;
}

/** Throws a MasterKeyError unless `master` is a key of this database (or the database has none yet). */
export async function verifyMasterKey(sql: Sql, master: MasterKey): Promise<void> {
  const known = await checkedMasterKeys(sql);
  if (known.length === 0) {
    const [{ wrapped }] = await sql<{ wrapped: number }[]>`
      select count(*)::int as wrapped from wallet_keys where wrapped_key is not null`;
    if (wrapped > 0) throw new MasterKeyError("Data keys exist but no master key check value: cannot verify");
    return await recordKeyCheck(sql, master);
  }
  if (!known.includes(master.id)) {
    throw new MasterKeyError(
      `Wrong master key: its id "${master.id}" is not one of this database's (${
        known.map((k) => `"${k}"`).join(", ")
      }); the data keys cannot be unwrapped`,
    );
  }
  const [row] = await sql<{ value: string }[]>`
    select value from service_settings where name = ${settingOf(master.id)}`;
  try {
    if (await openText(master.key, row.value, settingOf(master.id)) === CHECK_TEXT) return;
  } catch { /* reported below */ }
  throw new MasterKeyError(`Wrong master key: it does not open its check value (id "${master.id}")`);
}
