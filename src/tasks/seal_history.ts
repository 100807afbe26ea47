// `deno task seal-history`: a one-off for a database that has events from before issue 23, whose
// sensitive fields were written in clear. With every instance stopped, it rewrites those fields in
// place, sealed with their wallet's data key (an erased wallet's read "[erased]"), in passes that
// each commit. It is the one code path that changes stored events: it lifts the append-only trigger
// only inside its own transactions, changes only the declared sensitive fields (amounts, balances,
// costs, types, versions and times are copied untouched, so the audit sums as before), and records
// every pass in service_settings. Run deno task audit and deno task replay after it.
import type { Sql } from "../db/connect.ts";
import type { StoredEvent } from "../../events/catalogue.ts";
import { SENSITIVE_PATHS } from "../../events/catalogue.ts";
import type { DataKeys } from "../secrets/data_keys.ts";
import { sealEventData } from "../secrets/event_sealing.ts";
import { openTaskDatabase } from "./task_database.ts";
import { openTaskSecrets } from "./task_secrets.ts";

const EVENTS_PER_PASS = 2000;

interface ClearRow {
  wallet_id: string;
  version: number;
  type: string;
  data: Record<string, unknown>;
}

/** Seals every event still holding sensitive fields in clear; returns how many it rewrote. */
export async function sealHistory(sql: Sql, keys: DataKeys): Promise<number> {
  const types = Object.keys(SENSITIVE_PATHS);
  let sealed = 0;
  let after: { wallet_id: string; version: number } | undefined;
  while (true) {
    const rows: ClearRow[] = await sql<ClearRow[]>`
      select wallet_id, version, type, data from events
      where type = any(${types}) and not data ? '_enc'
        ${after ? sql`and (wallet_id, version) > (${after.wallet_id}, ${after.version})` : sql``}
      order by wallet_id, version limit ${EVENTS_PER_PASS}`;
    if (rows.length === 0) return sealed;
    after = rows[rows.length - 1];
    const found = await keys.keysFor(rows.map((r) => r.wallet_id), { create: true });
    const data = rows.map((row) =>
      sealEventData(
        { walletId: row.wallet_id, version: row.version, type: row.type, data: row.data } as StoredEvent,
        found.get(row.wallet_id) ?? null,
      )
    );
    const changed = rows.flatMap((row, i) =>
      // An erased wallet's fields already read "[erased]" after a first run: nothing to rewrite.
      JSON.stringify(data[i]) === JSON.stringify(row.data)
        ? []
        : [{ w: row.wallet_id, v: row.version, d: data[i] }]
    );
    if (changed.length === 0) continue;
    await sql.begin(async (tx) => {
      await tx`alter table events disable trigger events_no_update_or_delete`;
      await tx`
        update events e set data = x.d
        from jsonb_to_recordset(${tx.json(changed as any)}) as x(w text, v int, d jsonb)
        where e.wallet_id = x.w and e.version = x.v and not e.data ? '_enc'`;
      await tx`alter table events enable trigger events_no_update_or_delete`;
      await tx`insert into service_settings (name, value)
        values (${`history_sealed:${new Date().toISOString()}:${after!.wallet_id}/${after!.version}`},
                ${String(changed.length)})`;
    });
    sealed += changed.length;
  }
}

if (import.meta.main) {
  const db = await openTaskDatabase();
  const { keys } = await openTaskSecrets(db);
  const started = performance.now();
  const sealed = await sealHistory(db.sql, keys);
  await db.close();
  const seconds = ((performance.now() - started) / 1000).toFixed(2);
  console.log(
    `seal-history: ${sealed} events written in clear now sealed (${seconds} s); run the audit and replay`,
  );
}
