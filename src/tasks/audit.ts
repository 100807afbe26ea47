// `deno task audit`: recomputes every wallet's balance from the ledger events alone and compares
// it with the wallet projection. Prints a summary and every mismatch; exits 1 on any mismatch.
import type { Sql } from "../db/connect.ts";
import { creditDeltaSql } from "../../events/catalogue.ts";
import { openTaskDatabase } from "./task_database.ts";

export interface AuditReport {
  wallets: number;
  events: number;
  creditsIn: number;
  creditsOut: number;
  mismatches: string[];
}

export async function auditLedger(sql: Sql): Promise<AuditReport> {
  const delta = creditDeltaSql();
  // One pass over the log: running balance per wallet, checked against every balance an event
  // states, against the version sequence and against the projected wallet row.
  const [totals] = await sql.unsafe(`
    select count(*)::bigint as events,
           coalesce(sum(greatest(${delta}, 0)), 0)::bigint as credits_in,
           coalesce(sum(greatest(-${delta}, 0)), 0)::bigint as credits_out
    from events`);
  const stated = await sql.unsafe(`
    select wallet_id, version, type, stated, computed from (
      select wallet_id, version, type, (data->>'balance')::bigint as stated,
             sum(${delta}) over (partition by wallet_id order by version) as computed
      from events) e
    where stated is not null and stated <> computed
    order by wallet_id, version limit 1000`);
  const perWallet = await sql.unsafe(`
    with ledger as (
      select wallet_id, sum(${delta})::bigint as computed, max(version) as last_version,
             count(*) as versions
      from events group by wallet_id)
    select coalesce(l.wallet_id, w.wallet_id) as wallet_id, l.computed, l.last_version, l.versions,
           w.balance, w.version
    from ledger l full join wallets w on w.wallet_id = l.wallet_id
    where w.wallet_id is null or l.wallet_id is null or l.computed <> w.balance
       or l.last_version <> w.version or l.versions <> l.last_version or l.computed < 0
    order by 1 limit 1000`);
  const [{ wallets }] = await sql`select count(*)::bigint as wallets from wallets`;

  const mismatches: string[] = [];
  for (const r of perWallet) {
    if (r.balance === null) mismatches.push(`wallet ${r.wallet_id}: events but no wallet row`);
    else if (r.computed === null) mismatches.push(`wallet ${r.wallet_id}: wallet row but no events`);
    else {
      if (Number(r.computed) !== Number(r.balance)) {
        mismatches.push(`wallet ${r.wallet_id}: ledger says ${r.computed}, projection says ${r.balance}`);
      }
      if (Number(r.computed) < 0) mismatches.push(`wallet ${r.wallet_id}: negative balance ${r.computed}`);
      if (Number(r.last_version) !== Number(r.version)) {
        mismatches.push(
          `wallet ${r.wallet_id}: stream at version ${r.last_version}, projection at ${r.version}`,
        );
      }
      if (Number(r.versions) !== Number(r.last_version)) {
        mismatches.push(`wallet ${r.wallet_id}: ${r.versions} events for versions 1..${r.last_version}`);
      }
    }
  }
  for (const r of stated) {
    mismatches.push(
      `wallet ${r.wallet_id} version ${r.version} (${r.type}): states balance ${r.stated}, events sum to ${r.computed}`,
    );
  }
  return {
    wallets: Number(wallets),
    events: Number(totals.events),
    creditsIn: Number(totals.credits_in),
    creditsOut: Number(totals.credits_out),
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
