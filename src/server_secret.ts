// The key of signed download links: SERVER_SECRET when set, otherwise one generated at the first
// start and kept in service_settings, so every instance and every restart signs alike.
import type { Sql } from "./db/connect.ts";
import { randomId } from "./ids.ts";
import { cachedPromise } from "./promise_cache.ts";

const SETTING = "server_secret";
const loaded = new WeakMap<Sql, Promise<string>>();

/** The server secret of the database behind `sql`, read once per connection pool. */
export function serverSecretFor(sql: Sql, configured: string | undefined): Promise<string> {
  if (configured !== undefined) return Promise.resolve(configured);
  // A failed read (database down) is tried again by the next caller.
  return cachedPromise(loaded, sql, () => loadOrCreate(sql));
}

async function loadOrCreate(sql: Sql): Promise<string> {
  // Racing first starts both insert; the first one wins and every instance reads its value.
  await sql`insert into service_settings (name, value) values (${SETTING}, ${randomId(48)})
    on conflict (name) do nothing`;
  const [row] = await sql<{ value: string }[]>`select value from service_settings where name = ${SETTING}`;
  return row.value;
}
