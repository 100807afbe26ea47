// The wallet read model: balance, creation time, last use and the stream version. It is also the
// row the ledger locks, so it doubles as the concurrency gate of each wallet.
import type { Queryable } from "../src/db/connect.ts";
import { creditChange, type StoredEvent } from "../events/catalogue.ts";
import type { Projection } from "./projection.ts";

export interface WalletRow {
  wallet_id: string;
  balance: number;
  version: number;
  created_at: Date;
  last_used_at: Date;
  deactivated_at: Date | null;
  /** Alerts fire when a debit leaves the balance below this; 0: off. */
  low_balance_threshold: number;
  /** An alert went out in the current episode: no other until the balance is back at the threshold. */
  low_balance_alerted: boolean;
}

/**
 * Calls made with the token: only these keep a wallet from deactivation (CONTRACT section 3).
 * Emails and scheduled runs are billed to the wallet but nobody used the token for them.
 */
const USED_BY_TOKEN = new Set(["kv", "token", "webhook"]);

export function evolveWallet(row: WalletRow | undefined, event: StoredEvent): WalletRow | undefined {
  if (event.type === "WalletOpened") {
    return {
      wallet_id: event.walletId,
      balance: 0,
      version: event.version,
      created_at: event.recordedAt,
      last_used_at: event.recordedAt,
      deactivated_at: null,
      low_balance_threshold: 0,
      low_balance_alerted: false,
    };
  }
  if (!row) return undefined;
  const next = { ...row, version: event.version };
  const money = creditChange(event);
  if (money) next.balance = money.balance;
  if (event.type === "CallBilled" && USED_BY_TOKEN.has(event.data.endpoint)) {
    next.last_used_at = event.recordedAt;
  }
  if (event.type === "WalletDeactivated") next.deactivated_at = event.recordedAt;
  if (event.type === "LowBalanceSettingsChanged") next.low_balance_threshold = event.data.threshold;
  if (event.type === "LowBalanceAlerted") next.low_balance_alerted = true;
  // The episode ends once the balance is back at or above the threshold.
  else if (next.low_balance_alerted && next.balance >= next.low_balance_threshold) {
    next.low_balance_alerted = false;
  }
  return next;
}

export const walletsProjection: Projection<WalletRow> = {
  table: "wallets",
  columns: [
    "wallet_id",
    "balance",
    "version",
    "created_at",
    "last_used_at",
    "deactivated_at",
    "low_balance_threshold",
    "low_balance_alerted",
  ],
  keyColumns: ["wallet_id"],
  keyOf: (event) => event.walletId,
  evolve: evolveWallet,
  readsPrevious: true,
  async load(tx, event) {
    const [row] = await tx<WalletRow[]>`
      select wallet_id, balance, version, created_at, last_used_at, deactivated_at, low_balance_threshold,
             low_balance_alerted
      from wallets where wallet_id = ${event.walletId}`;
    return row;
  },
  async save(tx, _event, row) {
    if (!row) return;
    await tx`
      insert into wallets (wallet_id, balance, version, created_at, last_used_at, deactivated_at,
                           low_balance_threshold, low_balance_alerted)
      values (${row.wallet_id}, ${row.balance}, ${row.version}, ${row.created_at}, ${row.last_used_at},
              ${row.deactivated_at}, ${row.low_balance_threshold}, ${row.low_balance_alerted})
      on conflict (wallet_id) do update set balance = excluded.balance, version = excluded.version,
        last_used_at = excluded.last_used_at, deactivated_at = excluded.deactivated_at,
        low_balance_threshold = excluded.low_balance_threshold, low_balance_alerted = excluded.low_balance_alerted`;
  },
};

/** Writes many wallet rows in one statement (the end of a ledger batch). */
export async function saveWallets(tx: Queryable, rows: WalletRow[]): Promise<void> {
  if (rows.length === 0) return;
  await tx`
    insert into wallets (wallet_id, balance, version, created_at, last_used_at, deactivated_at,
                         low_balance_threshold, low_balance_alerted)
    select * from jsonb_to_recordset(${tx.json(rows as any)}) as x(
      wallet_id text, balance bigint, version integer, created_at timestamptz, last_used_at timestamptz,
      deactivated_at timestamptz, low_balance_threshold bigint, low_balance_alerted boolean)
    on conflict (wallet_id) do update set balance = excluded.balance, version = excluded.version,
      last_used_at = excluded.last_used_at, deactivated_at = excluded.deactivated_at,
      low_balance_threshold = excluded.low_balance_threshold, low_balance_alerted = excluded.low_balance_alerted`;
}

/**
 * Locks several wallet rows, always in id order so that batches running at the same time
 * cannot deadlock, and returns them by id.
 */
export async function lockWallets(tx: Queryable, walletIds: string[]): Promise<Map<string, WalletRow>> {
  const ids = [...new Set(walletIds)].sort();
  const rows = await tx<WalletRow[]>`
    select wallet_id, balance, version, created_at, last_used_at, deactivated_at, low_balance_threshold,
             low_balance_alerted
    from wallets where wallet_id = any(${ids}) order by wallet_id for update`;
  return new Map(rows.map((row) => [row.wallet_id, row]));
}

/** Locks the wallet row for the rest of the transaction and returns it. */
export async function lockWallet(tx: Queryable, walletId: string): Promise<WalletRow | undefined> {
  const [row] = await tx<WalletRow[]>`
    select wallet_id, balance, version, created_at, last_used_at, deactivated_at, low_balance_threshold,
             low_balance_alerted
    from wallets where wallet_id = ${walletId} for update`;
  return row;
}

/** The active wallet of a token hash, or undefined (unknown or deactivated). */
export async function findActiveWallet(sql: Queryable, walletId: string): Promise<WalletRow | undefined> {
  const [row] = await sql<WalletRow[]>`
    select wallet_id, balance, version, created_at, last_used_at, deactivated_at, low_balance_threshold,
             low_balance_alerted
    from wallets where wallet_id = ${walletId} and deactivated_at is null`;
  return row;
}
