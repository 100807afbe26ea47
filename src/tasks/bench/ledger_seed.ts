// Set-based seeding for the offline measures: a consistent ledger of N events with its wallet,
// call-log and usage projections, and call-log rows spread over expiry partitions for the sweep.
import type { Sql } from "../../db/connect.ts";

/** Events per seeded wallet: opened, granted, then billed calls. */
export const EVENTS_PER_WALLET = 1000;
/** Wallets seeded per statement: bounds each statement's work and shows progress. */
const WALLETS_PER_STATEMENT = 1000;
const GRANT = 1_000_000;

/**
 * Appends `total` events (1000 per wallet: WalletOpened, CreditsGranted, then CallBilled) and the
 * projection rows they fold into, in SQL. Times are whole milliseconds, as the service writes them,
 * so that replay rebuilds exactly the seeded rows.
 */
export async function seedLedger(sql: Sql, total: number, progress: (done: number) => void = () => {}) {
  const wallets = Math.max(1, Math.round(total / EVENTS_PER_WALLET));
  const [{ base }] = await sql`select date_trunc('milliseconds', now()) - interval '1 hour' as base`;
  for (let first = 1; first <= wallets; first += WALLETS_PER_STATEMENT) {
    const last = Math.min(wallets, first + WALLETS_PER_STATEMENT - 1);
    await sql.unsafe(
      `insert into events (wallet_id, version, type, data, recorded_at)
       select 'w' || lpad(w::text, 8, '0'), v,
         case v when 1 then 'WalletOpened' when 2 then 'CreditsGranted' else 'CallBilled' end,
         case v when 1 then '{}'::jsonb
                when 2 then jsonb_build_object('amount', ${GRANT}, 'balance', ${GRANT}, 'reason', 'bench')
                else jsonb_build_object('callId', 'c' || v, 'method', 'GET', 'path', '/kv/b/k', 'endpoint', 'kv',
                       'status', 200, 'cost', 1, 'balance', ${GRANT} - (v - 2), 'ms', 1) end,
         $1::timestamptz
       from generate_series($2::int, $3::int) w, generate_series(1, ${EVENTS_PER_WALLET}) v`,
      [base, first, last],
    );
    progress(last * EVENTS_PER_WALLET);
  }
  await sql.unsafe(
    `insert into wallets (wallet_id, balance, version, created_at, last_used_at, deactivated_at)
     select 'w' || lpad(w::text, 8, '0'), ${
      GRANT - (EVENTS_PER_WALLET - 2)
    }, ${EVENTS_PER_WALLET}, $1, $1, null
     from generate_series(1, ${wallets}) w`,
    [base],
  );
  await sql.unsafe(
    `insert into call_logs
     select wallet_id, data->>'callId', version, 'GET', '/kv/b/k', 'kv', 200, null, 1, (data->>'balance')::bigint, 1,
            recorded_at, recorded_at + interval '7 days'
     from events where type = 'CallBilled'`,
  );
  // Every seeded call is a 1-credit KV read: its usage is one count per wallet and day.
  await sql.unsafe(
    `insert into daily_usage
     select wallet_id, (recorded_at at time zone 'UTC')::date, 'kv', count(*), count(*), 0
     from events where type = 'CallBilled' group by 1, 2`,
  );
  await sql`analyze events`;
  return { wallets, events: wallets * EVENTS_PER_WALLET };
}

/**
 * Adds `rows` call-log rows with expiries spread evenly over the 8 days from `from`, so that they
 * fill every partition of the retention window; the rows are bare (one wallet per 1000 rows).
 */
export async function seedCallLogs(
  sql: Sql,
  { rows, from, offset = 0 }: { rows: number; from: Date; offset?: number },
) {
  await sql.unsafe(
    `insert into call_logs
     select 'w' || lpad((i / 1000)::text, 8, '0'), 's' || i, i, 'GET', '/kv/b/k', 'kv', 200, null, 1, 0, 1,
            $1::timestamptz - interval '7 days',
            $1::timestamptz + (i % 8000) * interval '86.4 seconds'
     from generate_series($2::bigint, $3::bigint) i`,
    [from, offset + 1, offset + rows],
  );
}
