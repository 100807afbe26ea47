// The low-balance configuration of each wallet: threshold, webhook target, email address (and
// whether its owner confirmed it, from the link last sent) and the key alert deliveries are signed with.
import type { Queryable } from "../src/db/connect.ts";
import type { EventData } from "../events/catalogue.ts";
import { defineProjection, rowRead } from "./projection.ts";

export type LowBalanceWebhook = NonNullable<EventData<"LowBalanceSettingsChanged">["webhook"]>;

export interface WalletSettingsRow {
  wallet_id: string;
  low_balance_threshold: number;
  low_balance_webhook: LowBalanceWebhook | null;
  low_balance_email: string | null;
  alert_secret: string;
  /** Alerts go to low_balance_email only once this is true (issue 23). */
  low_balance_email_confirmed: boolean;
  /** The confirmation link last sent for the address, and when it stops working. */
  email_link_id: string | null;
  email_link_expires_at: Date | null;
}

export const walletSettingsProjection = defineProjection<WalletSettingsRow>({
  table: "wallet_settings",
  columns: [
    "wallet_id",
    "low_balance_threshold",
    "low_balance_webhook",
    "low_balance_email",
    "alert_secret",
    "low_balance_email_confirmed",
    "email_link_id",
    "email_link_expires_at",
  ],
  keyColumns: ["wallet_id"],
  keyRow: (event) =>
    event.type === "LowBalanceSettingsChanged" || event.type === "AlertEmailConfirmed"
      ? { wallet_id: event.walletId }
      : null,
  evolve(row, event) {
    if (event.type === "AlertEmailConfirmed") {
      return row && { ...row, low_balance_email_confirmed: true };
    }
    if (event.type !== "LowBalanceSettingsChanged") return row;
    const link = event.data.emailLink;
    return {
      wallet_id: event.walletId,
      low_balance_threshold: event.data.threshold,
      low_balance_webhook: event.data.webhook ?? null,
      low_balance_email: event.data.email ?? null,
      alert_secret: event.data.secret,
      low_balance_email_confirmed: event.data.emailConfirmed === true,
      // A change that sends no new link keeps the pending one (the address is the same).
      email_link_id: link?.linkId ?? (event.data.email === undefined ? null : row?.email_link_id ?? null),
      email_link_expires_at: link
        ? new Date(link.expiresAt)
        : (event.data.email === undefined ? null : row?.email_link_expires_at ?? null),
    };
  },
  // AlertEmailConfirmed changes one column of the row; the rows are few (one per wallet with settings).
  readsPrevious: true,
  removedWithWallet: true,
});

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
  keyRow: (walletId) => ({ wallet_id: walletId }),
  async load(sql, walletIds) {
    return await sql<WalletSettingsRow[]>`select * from wallet_settings where wallet_id = any(${walletIds})`;
  },
});
