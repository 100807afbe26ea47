// Applies the numbered SQL migrations in src/db/migrations once each, in order, under a lock
// so that several instances starting together do not race.
import type { Sql } from "./connect.ts";

const MIGRATIONS_DIR = new URL("./migrations/", import.meta.url);
const LOCK_ID = 727_001;

export async function migrate(sql: Sql): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(MIGRATIONS_DIR)) {
    if (entry.isFile && /^\d{3}_[a-z0-9_]+\.sql$/.test(entry.name)) files.push(entry.name);
  }
  files.sort();
  const applied: string[] = [];
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCK_ID})`;
    await tx`create table if not exists schema_migrations (
      version text primary key, applied_at timestamptz not null default now())`;
    const done = new Set((await tx`select version from schema_migrations`).map((r) => r.version as string));
    for (const file of files) {
      if (done.has(file)) continue;
      const text = await Deno.readTextFile(new URL(file, MIGRATIONS_DIR));
      await tx.unsafe(text);
      await tx`insert into schema_migrations (version) values (${file})`;
      applied.push(file);
    }
  });
  return applied;
}
