// Claims on due runs (table `schedule_claims`): which scheduler instance handles a planned time.
// A claim only spares the other instances the work; that a planned time runs at most once is
// settled by the run's own transaction, under the wallet's lock (see scheduler.ts).
import type { Queryable, Sql } from "../db/connect.ts";
import { randomId } from "../ids.ts";
import { type ReadKind, rowId } from "../../projections/projection.ts";
import type { Effect } from "../ledger/command.ts";
import type { EffectApplier } from "../ledger/pending_writes.ts";

export interface ScheduleClaim {
  walletId: string;
  webhookId: string;
  plannedAt: Date;
  token: string;
}

/**
 * Claims up to `limit` due runs (next planned time at or before `now`) for `leaseMs`. SKIP LOCKED
 * lets instances claim at the same moment without waiting on each other's rows; the key admits one
 * live claim per planned time; a claim whose lease ran out (its instance died) is taken over.
 */
export async function claimDueRuns(
  sql: Sql,
  options: { now: Date; limit: number; leaseMs: number },
): Promise<ScheduleClaim[]> {
  const { now, limit, leaseMs } = options;
  const token = randomId(20);
  const until = new Date(now.getTime() + leaseMs);
  const rows = await sql<{ wallet_id: string; webhook_id: string; planned_at: Date }[]>`
    with due as (
      select s.wallet_id, s.webhook_id, s.next_run_at from schedules s
      where s.next_run_at <= ${now}
        and not exists (
          select 1 from schedule_claims c
          where c.wallet_id = s.wallet_id and c.webhook_id = s.webhook_id and c.planned_at = s.next_run_at
            and c.claimed_until > ${now})
      order by s.next_run_at
      limit ${limit}
      for update of s skip locked)
    insert into schedule_claims (wallet_id, webhook_id, planned_at, claim_token, claimed_until)
    select wallet_id, webhook_id, next_run_at, ${token}, ${until} from due
    on conflict (wallet_id, webhook_id, planned_at) do update
      set claim_token = excluded.claim_token, claimed_until = excluded.claimed_until
      where schedule_claims.claimed_until <= ${now}
    returning wallet_id, webhook_id, planned_at`;
  return rows.map((row) => ({
    walletId: row.wallet_id,
    webhookId: row.webhook_id,
    plannedAt: row.planned_at,
    token,
  }));
}

// The planned time goes in as its ISO text (Date's toJSON).
const claimId = (claim: ScheduleClaim) => rowId(["walletId", "webhookId", "plannedAt", "token"], claim);

/** Whether the claim is still this instance's (a ledger read; the run's schedule lock keeps it so). */
export const claimHeldRead: ReadKind<ScheduleClaim, true> = {
  name: "schedule claim",
  id: claimId,
  async load(sql, claims) {
    const keys = claims.map((c) => ({ w: c.walletId, h: c.webhookId, p: c.plannedAt, t: c.token }));
    const rows = await sql<
      { wallet_id: string; webhook_id: string; planned_at: Date; claim_token: string }[]
    >`
      select c.wallet_id, c.webhook_id, c.planned_at, c.claim_token
      from jsonb_to_recordset(${sql.json(keys as never)}) as x(w text, h text, p timestamptz, t text)
      join schedule_claims c on c.wallet_id = x.w and c.webhook_id = x.h and c.planned_at = x.p and c.claim_token = x.t`;
    return new Map(rows.map((r) => [
      claimId({
        walletId: r.wallet_id,
        webhookId: r.webhook_id,
        plannedAt: r.planned_at,
        token: r.claim_token,
      }),
      true as const,
    ]));
  },
  touches: () => [],
  evolve: (held) => held,
};

/** The run's transaction ends the claim it handled. */
export interface EndScheduleClaim extends Effect {
  type: "endScheduleClaim";
  claim: ScheduleClaim;
}

export const endScheduleClaims: EffectApplier<EndScheduleClaim> = {
  async apply(tx, effects) {
    for (const { claim } of effects) await releaseClaim(tx, claim);
  },
};

/** Gives a claim up when its run did not happen, so the planned time is free again at once. */
export async function releaseClaim(sql: Queryable, claim: ScheduleClaim): Promise<void> {
  await sql`
    delete from schedule_claims
    where wallet_id = ${claim.walletId} and webhook_id = ${claim.webhookId} and planned_at = ${claim.plannedAt}
      and claim_token = ${claim.token}`;
}

/** Claims whose lease ran out before `before` and that nothing took over: their schedules moved on. */
export async function sweepExpiredClaims(sql: Queryable, before: Date): Promise<number> {
  const rows = await sql`delete from schedule_claims where claimed_until < ${before} returning 1`;
  return rows.length;
}
