// Tokens unused for two years are deactivated (CONTRACT section 3): `WalletDeactivated` makes the
// token answer 401 and takes the wallet's KV entries, webhooks and mailboxes out of the read models.
// The ledger events stay, so the audit still adds up.
import type { Sql } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { UnbilledCommand } from "../ledger/command.ts";
import type { Clock } from "../clock.ts";
import { newEvent } from "../../events/catalogue.ts";
import { idleWallets } from "../../projections/wallets.ts";
import { type PeriodicJob, startPeriodic } from "../periodic.ts";

export const SWEEP_BATCH = 500;
export const DEACTIVATION_CHECK_MS = 6 * 3600 * 1000;

/** The last moment of use that still counts as recent at `now`: two calendar years before it. */
export function inactivityCutoff(now: Date): Date {
  const cutoff = new Date(now);
  cutoff.setUTCFullYear(cutoff.getUTCFullYear() - 2);
  return cutoff;
}

/** Deactivates the wallet if it is still idle under its lock: a call may have used it since the query. */
export function deactivateCommand(walletId: string): UnbilledCommand<boolean> {
  return {
    walletId,
    decide({ wallet, now }) {
      if (!wallet || wallet.deactivated_at || wallet.last_used_at >= inactivityCutoff(now)) {
        return { outcome: false };
      }
      return {
        outcome: true,
        events: [newEvent("WalletDeactivated", { lastUsedAt: wallet.last_used_at.toISOString() })],
      };
    },
  };
}

/** Deactivates every wallet idle since before the cutoff; returns how many. */
export async function deactivateIdleWallets(sql: Sql, ledger: Ledger, clock: Clock): Promise<number> {
  let total = 0;
  while (true) {
    const idle = await idleWallets(sql, inactivityCutoff(clock.now()), SWEEP_BATCH);
    for (const walletId of idle) {
      if (await ledger.appendUnbilled(deactivateCommand(walletId))) total++;
    }
    if (idle.length < SWEEP_BATCH) return total;
  }
}

/** Runs the check at start and every few hours; several instances may run it, the lock decides. */
export function startDeactivationSweep(
  sql: Sql,
  { ledger, clock, intervalMs = DEACTIVATION_CHECK_MS }: {
    ledger: Ledger;
    clock: Clock;
    intervalMs?: number;
  },
): PeriodicJob {
  return startPeriodic("deactivation sweep", () => deactivateIdleWallets(sql, ledger, clock), {
    intervalMs,
    firstAfterMs: 2000,
  });
}
