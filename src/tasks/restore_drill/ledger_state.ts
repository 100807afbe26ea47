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
