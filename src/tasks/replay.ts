// `deno task replay`: rebuilds every projection from the log alone, with the same folds the ledger
// runs inline, into fresh tables of a `replay` schema, and reports every row that differs from
// the live tables. Exits 1 on any difference. It streams: the log is read wallet by wallet in
// pages and the rebuilt rows are written in batches, so memory does not grow with the log.
import type { Sql } from "../db/connect.ts";
import { readEventsByWallet } from "../../events/store.ts";
import type { StoredEvent } from "../../events/catalogue.ts";
import { PROJECTIONS } from "../../projections/mod.ts";
import { openTaskDatabase } from "./task_database.ts";
import { walletFold } from "./replay_fold.ts";
import { createReplayTables, REPLAY_SCHEMA, type TableDifference } from "./replay_tables.ts";
import type { DataKeys } from "../secrets/data_keys.ts";
import { openEvents } from "../secrets/sealer.ts";
import { openTaskSecrets } from "./task_secrets.ts";

export interface ReplayReport {
  events: number;
  tables: TableDifference[];
}

export interface ReplayOptions {
  /** Keep the rebuilt tables in the `replay` schema. */
  keep?: boolean;
  /**
   * Write through COPY streams (PostgreSQL only, not the embedded PGlite); the pool needs a
   * connection per projection plus one.
   */
  copy?: boolean;
  /** Events per page read from the log (tests make it small to split wallets across pages). */
  pageSize?: number;
  /**
   * Opens sealed fields with the wallets' data keys (the service's events); without it the log is
   * folded as stored (logs written in clear, by an in-process ledger without a sealer).
   */
  keys?: DataKeys;
}

/** Connections replay needs with COPY: a stream per projection, one reader, one spare. */
export const REPLAY_CONNECTIONS = PROJECTIONS.length + 2;

/** Without the data keys a sealed event would fold "[encrypted]" as its values: refused instead. */
function refuseSealed(page: StoredEvent[]): StoredEvent[] {
  const sealed = page.find((event) => typeof (event.data as { _enc?: unknown })._enc === "string");
  if (sealed) {
    throw new Error(
      `Event ${sealed.walletId}/${sealed.version} has sealed fields: replay needs the data keys (options.keys)`,
    );
  }
  return page;
}

export async function replayProjections(sql: Sql, options: ReplayOptions = {}): Promise<ReplayReport> {
  const tables = await createReplayTables(sql, PROJECTIONS, { copy: options.copy ?? false });
  const erased = new Set(
    (await sql<{ wallet_id: string }[]>`select wallet_id from wallet_keys where erased_at is not null`)
      .map((row) => row.wallet_id),
  );
  const fold = walletFold(PROJECTIONS, (index, row) => tables.add(index, row), {
    isErased: (walletId) => erased.has(walletId),
  });
  let events = 0;
  for await (const stored of readEventsByWallet(sql, options.pageSize)) {
    const page = options.keys ? await openEvents(options.keys, stored) : refuseSealed(stored);
    for (const event of page) fold.apply(event);
    events += page.length;
    await tables.flushFull();
  }
  fold.finish();
  await tables.flushAll();
  const report = { events, tables: await tables.compare() };
  if (!options.keep) await sql.unsafe(`drop schema ${REPLAY_SCHEMA} cascade`);
  return report;
}

if (import.meta.main) {
  const keep = Deno.args.includes("--keep");
  const db = await openTaskDatabase({ maxConnections: REPLAY_CONNECTIONS });
  const { keys } = await openTaskSecrets(db);
  const started = performance.now();
  const report = await replayProjections(db.sql, { keep, copy: !db.embedded, keys });
  await db.close();
  const seconds = ((performance.now() - started) / 1000).toFixed(2);
  let differences = 0;
  console.log(
    `replay: ${report.events} events folded into ${report.tables.length} projections (${seconds} s)`,
  );
  for (const t of report.tables) {
    differences += t.onlyLive + t.onlyReplayed;
    console.log(`  ${t.table}: ${t.rows} rows rebuilt, ${t.onlyLive + t.onlyReplayed} differences`);
    for (const sample of t.samples) console.log(`    DIFFERENCE ${sample}`);
  }
  if (keep) console.log(`rebuilt tables kept in schema "${REPLAY_SCHEMA}"`);
  Deno.exit(differences ? 1 : 0);
}
