// `deno task replay`: rebuilds every projection from the log alone, with the same folds the ledger
// runs inline, into fresh tables of a `replay` schema, and reports every row that differs from
// the live tables. Exits 1 on any difference.
import type { Sql } from "../db/connect.ts";
import { readAllEvents } from "../../events/store.ts";
import { type Projection, removesWalletRows } from "../../projections/projection.ts";
import { PROJECTIONS } from "../../projections/mod.ts";
import { openTaskDatabase } from "./task_database.ts";

export interface ReplayReport {
  events: number;
  tables: { table: string; rows: number; onlyLive: number; onlyReplayed: number; samples: string[] }[];
}

const SCHEMA = "replay";
const INSERT_CHUNK = 1000;

function foldAll(projections: Projection<any>[]) {
  const states = projections.map(() => new Map<string, Record<string, unknown>>());
  return {
    states,
    apply(event: Parameters<Projection<any>["evolve"]>[1]) {
      projections.forEach((projection, i) => {
        if (removesWalletRows(projection, event)) {
          for (const [key, row] of states[i]) if (row.wallet_id === event.walletId) states[i].delete(key);
          return;
        }
        const key = projection.keyOf(event);
        if (key === null) return;
        const next = projection.evolve(states[i].get(key), event);
        if (next === undefined) states[i].delete(key);
        else states[i].set(key, next);
      });
    },
  };
}

export async function replayProjections(sql: Sql, options: { keep?: boolean } = {}): Promise<ReplayReport> {
  const fold = foldAll(PROJECTIONS);
  let events = 0;
  for await (const page of readAllEvents(sql)) {
    for (const event of page) fold.apply(event);
    events += page.length;
  }

  await sql.unsafe(`drop schema if exists ${SCHEMA} cascade`);
  await sql.unsafe(`create schema ${SCHEMA}`);
  const tables: ReplayReport["tables"] = [];
  for (const [i, projection] of PROJECTIONS.entries()) {
    const { table, columns } = projection;
    await sql.unsafe(`create table ${SCHEMA}.${table} (like public.${table} including defaults)`);
    const rows = [...fold.states[i].values()];
    for (let at = 0; at < rows.length; at += INSERT_CHUNK) {
      const chunk = rows.slice(at, at + INSERT_CHUNK);
      await sql`insert into ${sql(SCHEMA)}.${sql(table)} ${(sql as any)(chunk, ...columns)}`;
    }
    const filter = projection.liveFilter ? `where ${projection.liveFilter}` : "";
    const list = columns.map((c) => `"${c}"`).join(", ");
    const diff = (a: string, b: string) =>
      `select ${list} from ${a}.${table} ${filter} except all select ${list} from ${b}.${table} ${filter}`;
    const onlyLive = await sql.unsafe(diff("public", SCHEMA));
    const onlyReplayed = await sql.unsafe(diff(SCHEMA, "public"));
    const keyOf = (r: Record<string, unknown>) => projection.keyColumns.map((k) => String(r[k])).join("/");
    tables.push({
      table,
      rows: rows.length,
      onlyLive: onlyLive.length,
      onlyReplayed: onlyReplayed.length,
      samples: [
        ...onlyLive.slice(0, 5).map((r) => `live only: ${keyOf(r)}`),
        ...onlyReplayed.slice(0, 5).map((r) => `replayed only: ${keyOf(r)}`),
      ],
    });
  }
  if (!options.keep) await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  return { events, tables };
}

if (import.meta.main) {
  const keep = Deno.args.includes("--keep");
  const db = await openTaskDatabase();
  const started = performance.now();
  const report = await replayProjections(db.sql, { keep });
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
  if (keep) console.log(`rebuilt tables kept in schema "${SCHEMA}"`);
  Deno.exit(differences ? 1 : 0);
}
