// The wallet read model: balance, creation time, last use and the stream version. It is also the
// row the ledger locks, so it doubles as the concurrency gate of each wallet.
import type { Queryable } from "../src/db/connect.ts";
import type { StoredEvent } from "../events/catalogue.ts";
import { creditChange } from "../events/money.ts";
import type { Projection } from "./projection.ts";
import { writeRows } from "./projection_sql.ts";

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
  /** Where alerts go: the settings name a webhook, an email address, or both. */
  alert_webhook: boolean;
  alert_email: boolean;
}

const COLUMNS = [
  "wallet_id",
  "balance",
  "version",
  "created_at",
  "last_used_at",
  "deactivated_at",
  "low_balance_threshold",
  "low_balance_alerted",
  "alert_webhook",
  "alert_email",
] as const;

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
      alert_webhook: false,
      alert_email: false,
    };
  }
  if (!row) return undefined;
  const next = { ...row, version: event.version };
  const money = creditChange(event);
  if (money) {
    // Paired with the ledger's payable-charge check: every balance an event states follows from the last.
    if (money.balance !== row.balance + money.delta) {
      throw new RangeError(
        `Event ${event.type} of wallet ${event.walletId} v${event.version} states balance ${money.balance}, ` +
          `not ${row.balance} + ${money.delta}`,
      );
    }
    next.balance = money.balance;
  }
  if (event.type === "CallBilled" && USED_BY_TOKEN.has(event.data.endpoint)) {
    next.last_used_at = event.recordedAt;
  }
  if (event.type === "WalletDeactivated") next.deactivated_at = event.recordedAt;
  if (event.type === "LowBalanceSettingsChanged") {
    next.low_balance_threshold = event.data.threshold;
    next.alert_webhook = event.data.webhook !== undefined;
    next.alert_email = event.data.email !== undefined;
  }
  if (event.type === "LowBalanceAlerted") next.low_balance_alerted = true;
  // The episode ends once the balance is back at or above the threshold.
  else if (next.low_balance_alerted && next.balance >= next.low_balance_threshold) {
    next.low_balance_alerted = false;
  }
  return next;
}

export const walletsProjection: Projection<WalletRow> = {
  table: "wallets",
  columns: COLUMNS,
  keyColumns: ["wallet_id"],
  keyOf: (event) => event.walletId,
  evolve: evolveWallet,
  keyRow: (event) => ({ wallet_id: event.walletId }),
  readsPrevious: true,
};

/** Writes many wallet rows in one statement (the end of a ledger batch). */
export async function saveWallets(tx: Queryable, rows: WalletRow[]): Promise<void> {
  await writeRows(tx, walletsProjection, { removedWallets: [], deleted: [], written: rows });
}

/**
 * Locks several wallet rows, always in id order so that batches running at the same time
 * cannot deadlock, and returns them by id.
 */
export async function lockWallets(tx: Queryable, walletIds: string[]): Promise<Map<string, WalletRow>> {
  const ids = [...new Set(walletIds)].sort();
  const rows = await tx<WalletRow[]>`
    select ${tx(COLUMNS)} from wallets where wallet_id = any(${ids}) order by wallet_id for update`;
  return new Map(rows.map((row) => [row.wallet_id, row]));
}

/** Locks the wallet row for the rest of the transaction and returns it. */
export async function lockWallet(tx: Queryable, walletId: string): Promise<WalletRow | undefined> {
  const [row] = await tx<WalletRow[]>`select ${
    tx(COLUMNS)
  } from wallets where wallet_id = ${walletId} for update`;
  return row;
}

/** The active wallet of a token hash, or undefined (unknown or deactivated). */
export async function findActiveWallet(sql: Queryable, walletId: string): Promise<WalletRow | undefined> {
  const [row] = await sql<WalletRow[]>`
    select ${sql(COLUMNS)} from wallets where wallet_id = ${walletId} and deactivated_at is null`;
  return row;
}

/** Wallets not used by their token since before `cutoff`, oldest first (the deactivation sweep). */
export async function idleWallets(sql: Queryable, cutoff: Date, limit: number): Promise<string[]> {
  const rows = await sql<{ wallet_id: string }[]>`
    select wallet_id from wallets where deactivated_at is null and last_used_at < ${cutoff}
    order by last_used_at limit ${limit}`;
  return rows.map((row) => row.wallet_id);
}
