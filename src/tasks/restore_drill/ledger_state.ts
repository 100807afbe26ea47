// The ledger's state as the drill compares it between the source and a restored cluster: every
// wallet's balance and version, and every wallet's event stream (count, last version, balances
// stated), each list reduced to a count and an md5 so that a million events compare in one row.
import type { Sql } from "../../db/connect.ts";

export interface LedgerState {
  wallets: number;
  events: number;
  /** md5 of every wallet's id, balance and version, in id order. */
  walletsMd5: string;
  /** md5 of every wallet's event count, last version and sum of stated balances, in id order. */
  streamsMd5: string;
  /** The wallets' rows themselves (id, balance, version), in id order, for a difference report. */
  rows: WalletRow[];
}

export type WalletRow = [walletId: string, balance: number, version: number];

/** Reads the state in one repeatable-read transaction: a snapshot, even while the service writes. */
export async function readLedgerState(sql: Sql): Promise<LedgerState> {
  return await sql.begin("isolation level repeatable read read only", async (tx) => {
    const rows = await tx.unsafe(
      `select wallet_id, balance::bigint as balance, version::bigint as version from wallets order by wallet_id`,
    );
    const [w] = await tx.unsafe(
      `select count(*)::bigint as wallets,
              coalesce(md5(string_agg(wallet_id || ':' || balance || ':' || version, ',' order by wallet_id)), '')
                as md5
       from wallets`,
    );
    const [e] = await tx.unsafe(
      `select coalesce(sum(events), 0)::bigint as events,
              coalesce(md5(string_agg(wallet_id || ':' || events || ':' || last || ':' || stated, ','
                order by wallet_id)), '') as md5
       from (select wallet_id, count(*) as events, max(version) as last,
                    coalesce(sum((data->>'balance')::bigint), 0) as stated
             from events group by wallet_id) s`,
    );
    return {
      wallets: Number(w.wallets),
      events: Number(e.events),
      walletsMd5: w.md5,
      streamsMd5: e.md5,
      rows: rows.map((r: any) => [r.wallet_id, Number(r.balance), Number(r.version)] as WalletRow),
    };
  }) as LedgerState;
}

export interface StateComparison {
  same: boolean;
  /** Wallets only in the expected state, only in the restored one, and in both with other rows. */
  missing: number;
  extra: number;
  differing: number;
  /** A few of the differences, for the report. */
  samples: string[];
}

export function compareStates(expected: LedgerState, restored: LedgerState): StateComparison {
  const want = new Map(expected.rows.map(([id, balance, version]) => [id, `${balance}@${version}`]));
  const got = new Map(restored.rows.map(([id, balance, version]) => [id, `${balance}@${version}`]));
  const samples: string[] = [];
  let missing = 0, extra = 0, differing = 0;
  for (const [id, row] of want) {
    const other = got.get(id);
    if (other === undefined) {
      missing++;
      if (samples.length < 5) samples.push(`wallet ${id} missing (expected balance@version ${row})`);
    } else if (other !== row) {
      differing++;
      if (samples.length < 5) samples.push(`wallet ${id}: expected ${row}, restored ${other}`);
    }
  }
  for (const [id, row] of got) {
    if (!want.has(id)) {
      extra++;
      if (samples.length < 5) samples.push(`wallet ${id} not expected (restored balance@version ${row})`);
    }
  }
  const same = missing === 0 && extra === 0 && differing === 0 && expected.events === restored.events &&
    expected.walletsMd5 === restored.walletsMd5 && expected.streamsMd5 === restored.streamsMd5;
  if (!same && samples.length === 0) {
    samples.push(`events: expected ${expected.events}, restored ${restored.events}; streams md5 differ`);
  }
  return { same, missing, extra, differing, samples };
}

/**
 * For a source that kept writing (a live database): the restored state lies between two states
 * read on the source, `lower` before the target and `upper` after it. Every wallet of `lower` is
 * there at its version or later, none is there that `upper` lacks, and none is past `upper`'s
 * version. Balances are left to the audit and the event streams to `compareStreams`.
 */
export function compareWithin(
  lower: LedgerState,
  upper: LedgerState,
  restored: LedgerState,
): StateComparison {
  const low = new Map(lower.rows.map(([id, , version]) => [id, version]));
  const high = new Map(upper.rows.map(([id, , version]) => [id, version]));
  const got = new Map(restored.rows.map(([id, , version]) => [id, version]));
  const samples: string[] = [];
  let missing = 0, extra = 0, differing = 0;
  for (const [id, version] of low) {
    if (!got.has(id)) {
      missing++;
      if (samples.length < 5) samples.push(`wallet ${id} missing (at version ${version} before the target)`);
    }
  }
  for (const [id, version] of got) {
    const before = low.get(id) ?? 0;
    const after = high.get(id);
    if (after === undefined) {
      extra++;
      if (samples.length < 5) samples.push(`wallet ${id} not on the source after the target`);
    } else if (version < before || version > after) {
      differing++;
      if (samples.length < 5) {
        samples.push(`wallet ${id} at version ${version}, not within ${before}..${after}`);
      }
    }
  }
  return { same: missing + extra + differing === 0, missing, extra, differing, samples };
}

/** Each wallet's last version and an md5 of its stream up to it (version, type, data, time). */
const STREAM_DIGEST = `md5(string_agg(version || ':' || type || ':' || data::text || ':' ||
  (extract(epoch from recorded_at) * 1000000)::bigint, ',' order by version))`;

/**
 * Whether every wallet's restored event stream is the start of the same wallet's stream on the
 * source: the log is append-only, so a restore of any moment holds a prefix of it, event for event.
 */
export async function compareStreams(restored: Sql, source: Sql): Promise<StateComparison> {
  const mine = await restored.unsafe(
    `select wallet_id, max(version)::bigint as last, ${STREAM_DIGEST} as digest from events group by wallet_id`,
  );
  const theirs = new Map(
    (await source.unsafe(
      `select e.wallet_id, ${STREAM_DIGEST} as digest
       from events e join unnest($1::text[], $2::bigint[]) r(wallet_id, last)
         on e.wallet_id = r.wallet_id and e.version <= r.last
       group by e.wallet_id`,
      [mine.map((r: any) => r.wallet_id), mine.map((r: any) => Number(r.last))],
    )).map((r: any) => [r.wallet_id as string, r.digest as string]),
  );
  const samples: string[] = [];
  let missing = 0, differing = 0;
  for (const r of mine) {
    const digest = theirs.get(r.wallet_id);
    if (digest === undefined) missing++;
    else if (digest !== r.digest) differing++;
    else continue;
    if (samples.length < 5) {
      samples.push(
        `wallet ${r.wallet_id}: events 1..${r.last} ${digest ? "differ from" : "not on"} the source`,
      );
    }
  }
  return { same: missing + differing === 0, missing, extra: 0, differing, samples };
}
