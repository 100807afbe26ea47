// The outbox as /metrics shows it (metrics/delivery_metrics.ts): rows by state, the oldest due and
// oldest pending delivery, paused webhooks. One statement over every wallet, bounded: each count
// reads at most READING_CAP rows of a partial index, and the oldest rows are one index descent each
// (migration 026). Scrapes read it at most every 5 s.
import type { Sql } from "../db/connect.ts";
import type { OutboxState } from "../metrics/delivery_metrics.ts";

/** Counts stop here: past it an operator needs the trend, not the figure. */
export const READING_CAP = 10_000;

export async function readOutbox(sql: Sql, now: Date): Promise<OutboxState> {
  const [row] = await sql<
    {
      due: number;
      in_flight: number;
      scheduled: number;
      held: number;
      oldest_due: Date | null;
      oldest_pending: Date | null;
      paused: number;
    }[]
  >`
    with planned as (
      select d.next_attempt_at, d.locked_until from webhook_deliveries d
      where d.next_attempt_at is not null order by d.next_attempt_at limit ${READING_CAP})
    select
      (select count(*) from planned p
       where p.next_attempt_at <= ${now} and (p.locked_until is null or p.locked_until <= ${now}))::int as due,
      (select count(*) from planned p where p.locked_until > ${now})::int as in_flight,
      (select count(*) from planned p
       where p.next_attempt_at > ${now} and (p.locked_until is null or p.locked_until <= ${now}))::int as scheduled,
      (select count(*) from (select 1 from webhook_deliveries d where d.held limit ${READING_CAP}) h)::int as held,
      (select min(p.next_attempt_at) from planned p where p.next_attempt_at <= ${now}) as oldest_due,
      (select min(d.created_at) from (
         select d.created_at from webhook_deliveries d where d.next_attempt_at is not null
         order by d.next_attempt_at limit ${READING_CAP}) d) as oldest_pending,
      (select count(*) from (select 1 from webhook_health w where w.paused_at is not null limit ${READING_CAP}) w)::int
        as paused`;
  const age = (at: Date | null) => at === null ? 0 : Math.max(0, (now.getTime() - at.getTime()) / 1000);
  return {
    rows: { due: row.due, in_flight: row.in_flight, scheduled: row.scheduled, held: row.held },
    oldestDueSeconds: age(row.oldest_due),
    oldestPendingSeconds: age(row.oldest_pending),
    pausedWebhooks: row.paused,
  };
}
