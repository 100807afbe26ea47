// `deno task audit`: recomputes every wallet's balance from the ledger events alone and compares
// it with the wallet projection. Prints a summary and every mismatch; exits 1 on any mismatch.
import type { Sql } from "../db/connect.ts";
import { creditDeltaSql } from "../../events/money.ts";
import { openTaskDatabase } from "./task_database.ts";

export interface AuditReport {
  wallets: number;
  events: number;
  creditsIn: number;
  creditsOut: number;
  mismatches: string[];
}

/** Wallet ranges audited side by side, each on its own connection (sequentially on one). */
export const AUDIT_PARTS = 2;
/** Most mismatches listed of each kind. */
const MISMATCH_LIMIT = 1000;

/** `and wallet_id in [from, to)`, either end open, with the parameters it takes. */
function walletRange(from: string | null, to: string | null): { filter: string; params: string[] } {
  const params = [from, to].filter((bound): bound is string => bound !== null);
  const filter = (from === null ? "" : "and wallet_id >= $1::text ") +
    (to === null ? "" : `and wallet_id < $${params.length}::text`);
  return { filter, params };
}

/**
 * One pass over a range of wallets' streams in version order: the running balance against every
 * balance an event states, and per wallet the sum against the projected row, the version sequence
 * and the totals. Credit changes are summed as int (each is far below 2^31; a larger one fails the
 * cast loudly), which keeps the running sum out of numeric arithmetic.
 */
async function auditRange(sql: Sql, from: string | null, to: string | null) {
  const delta = creditDeltaSql();
  const { filter, params } = walletRange(from, to);
  const [row] = await sql.unsafe(
    `
    with ledger as (
      select wallet_id, count(*) as versions, max(version) as last_version, sum(delta) as computed,
             sum(greatest(delta, 0)) as credits_in, sum(greatest(-delta, 0)) as credits_out,
             count(*) filter (where stated <> running) as misstated
      from (select wallet_id, version, stated, delta,
                   sum(delta) over (partition by wallet_id order by version) as running
            from (select wallet_id, version, (data->>'balance')::bigint as stated, (${delta})::int as delta
                  from events where true ${filter}) e) r
      group by wallet_id),
    checked as (
      select coalesce(l.wallet_id, w.wallet_id) as wallet_id, l.computed, l.last_version, l.versions,
             l.misstated, w.balance, w.version
      from ledger l
      full join (select wallet_id, balance, version from wallets where true ${filter}) w
        on w.wallet_id = l.wallet_id)
    select (select coalesce(sum(versions), 0) from ledger)::bigint as events,
           (select coalesce(sum(credits_in), 0) from ledger)::bigint as credits_in,
           (select coalesce(sum(credits_out), 0) from ledger)::bigint as credits_out,
           (select coalesce(json_agg(m order by m.wallet_id), '[]') from (
              select * from checked
              where balance is null or computed is null or computed <> balance or last_version <> version
                 or versions <> last_version or computed < 0 or misstated > 0
              order by wallet_id limit ${MISMATCH_LIMIT}) m) as wallets`,
    params,
  );
  return row as unknown as { events: number; credits_in: number; credits_out: number; wallets: any[] };
}

/** The events whose stated balance differs from the running sum, in the given wallets only. */
async function misstatedEvents(sql: Sql, walletIds: string[]) {
  if (walletIds.length === 0) return [];
  const delta = creditDeltaSql();
  return await sql.unsafe(
    `
    select wallet_id, version, type, stated, computed from (
      select wallet_id, version, type, (data->>'balance')::bigint as stated,
             sum((${delta})::int) over (partition by wallet_id order by version) as computed
      from events where wallet_id = any($1)) e
    where stated is not null and stated <> computed
    order by wallet_id, version limit ${MISMATCH_LIMIT}`,
    [walletIds],
  );
}

/** Splits the wallet ids into `parts` ranges of about equal size: [from, to) with open ends. */
async function walletRanges(sql: Sql, parts: number): Promise<[string | null, string | null][]> {
  const [{ wallets }] = await sql`select count(*)::bigint as wallets from wallets`;
  const bounds: string[] = [];
  for (let i = 1; i < parts && wallets > 0; i++) {
    const [row] = await sql`
      select wallet_id from wallets order by wallet_id offset ${Math.floor((wallets * i) / parts)} limit 1`;
    if (row && row.wallet_id !== bounds[bounds.length - 1]) bounds.push(row.wallet_id);
  }
  const edges = [null, ...bounds, null];
  return edges.slice(1).map((to, i) => [edges[i], to]);
}

function describe(r: Record<string, any>): string[] {
  if (r.balance === null) return [`wallet ${r.wallet_id}: events but no wallet row`];
  if (r.computed === null) return [`wallet ${r.wallet_id}: wallet row but no events`];
  const found: string[] = [];
  if (Number(r.computed) !== Number(r.balance)) {
    found.push(`wallet ${r.wallet_id}: ledger says ${r.computed}, projection says ${r.balance}`);
  }
  if (Number(r.computed) < 0) found.push(`wallet ${r.wallet_id}: negative balance ${r.computed}`);
  if (Number(r.last_version) !== Number(r.version)) {
    found.push(`wallet ${r.wallet_id}: stream at version ${r.last_version}, projection at ${r.version}`);
  }
  if (Number(r.versions) !== Number(r.last_version)) {
    found.push(`wallet ${r.wallet_id}: ${r.versions} events for versions 1..${r.last_version}`);
  }
  return found;
}

export async function auditLedger(sql: Sql): Promise<AuditReport> {
  const ranges = await walletRanges(sql, AUDIT_PARTS);
  const parts = await Promise.all(ranges.map(([from, to]) => auditRange(sql, from, to)));
  const [{ wallets }] = await sql`select count(*)::bigint as wallets from wallets`;
  const flagged = parts.flatMap((part) => part.wallets).slice(0, MISMATCH_LIMIT);
  const mismatches = flagged.flatMap(describe);
  const misstated = await misstatedEvents(
    sql,
    flagged.filter((r) => Number(r.misstated) > 0).map((r) => r.wallet_id),
  );
  for (const r of misstated) {
    mismatches.push(
      `wallet ${r.wallet_id} version ${r.version} (${r.type}): states balance ${r.stated}, events sum to ${r.computed}`,
    );
  }
  return {
    wallets: Number(wallets),
    events: parts.reduce((sum, part) => sum + Number(part.events), 0),
    creditsIn: parts.reduce((sum, part) => sum + Number(part.credits_in), 0),
    creditsOut: parts.reduce((sum, part) => sum + Number(part.credits_out), 0),
    mismatches,
  };
}

if (import.meta.main) {
  const db = await openTaskDatabase();
  const started = performance.now();
  const report = await auditLedger(db.sql);
  await db.close();
  const seconds = ((performance.now() - started) / 1000).toFixed(2);
  console.log(
    `audit: ${report.wallets} wallets, ${report.events} events, ${report.creditsIn} credits in, ` +
      `${report.creditsOut} credits out, ${report.mismatches.length} mismatches (${seconds} s)`,
  );
  for (const line of report.mismatches) console.log(`MISMATCH ${line}`);
  Deno.exit(report.mismatches.length ? 1 : 0);
}
