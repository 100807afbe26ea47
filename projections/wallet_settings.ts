// The low-balance configuration of each wallet: threshold, webhook target, email address and the
// key alert deliveries are signed with.
import type { Queryable } from "../src/db/connect.ts";
import type { EventData } from "../events/catalogue.ts";
import { type Projection, rowRead } from "./projection.ts";

export type LowBalanceWebhook = NonNullable<EventData<"LowBalanceSettingsChanged">["webhook"]>;

export interface WalletSettingsRow {
  wallet_id: string;
  low_balance_threshold: number;
  low_balance_webhook: LowBalanceWebhook | null;
  low_balance_email: string | null;
  alert_secret: string;
}

export const walletSettingsProjection: Projection<WalletSettingsRow> = {
  table: "wallet_settings",
  columns: ["wallet_id", "low_balance_threshold", "low_balance_webhook", "low_balance_email", "alert_secret"],
  keyColumns: ["wallet_id"],
  keyOf: (event) => event.type === "LowBalanceSettingsChanged" ? event.walletId : null,
  evolve(_row, event) {
    if (event.type !== "LowBalanceSettingsChanged") return undefined;
    return {
      wallet_id: event.walletId,
      low_balance_threshold: event.data.threshold,
      low_balance_webhook: event.data.webhook ?? null,
      low_balance_email: event.data.email ?? null,
      alert_secret: event.data.secret,
    };
  },
  keyRow: (event) => ({ wallet_id: event.walletId }),
  readsPrevious: false,
  removedWithWallet: true,
};

export async function findWalletSettings(
  sql: Queryable,
  walletId: string,
): Promise<WalletSettingsRow | undefined> {
  const [row] = await sql<WalletSettingsRow[]>`select * from wallet_settings where wallet_id = ${walletId}`;
  return row;
}

/** A wallet's alert settings as a ledger read. */
export const walletSettingsRead = rowRead<string, WalletSettingsRow>(walletSettingsProjection, {
  name: "wallet settings",
  id: (walletId) => walletId,
  async load(sql, walletIds) {
    const rows = await sql<
      WalletSettingsRow[]
    >`select * from wallet_settings where wallet_id = any(${walletIds})`;
    return new Map(rows.map((row) => [row.wallet_id, row]));
  },
});
