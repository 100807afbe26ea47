// `deno task adopt-schedules`: a repair for databases older than the schedule model (migration
// 005): webhooks scheduled before it have no schedule row, so nothing plans their runs. Their rows
// are rebuilt from each wallet's log with the same fold replay uses, under the wallet's lock. Plans
// start at their configuration time, so runs missed since are skipped as after any downtime.
import type { Sql } from "../db/connect.ts";
import { readWalletEvents } from "../../events/store.ts";
import { lockWallet } from "../../projections/wallets.ts";
import {
  foldSchedules,
  insertScheduleIfMissing,
  walletsWithUnplannedSchedules,
} from "../../projections/schedules.ts";
import { openTaskDatabase } from "./task_database.ts";

const WALLETS_PER_PASS = 1000;

/** Adopts every unplanned schedule; returns how many wallets had some. */
export async function adoptUnplannedSchedules(sql: Sql): Promise<number> {
  const adopted = new Set<string>();
  while (true) {
    const wallets = (await walletsWithUnplannedSchedules(sql, WALLETS_PER_PASS)).filter((w) =>
      !adopted.has(w)
    );
    for (const walletId of wallets) {
      adopted.add(walletId);
      await sql.begin(async (tx) => {
        await lockWallet(tx, walletId);
        for (const row of foldSchedules(await readWalletEvents(tx, walletId)).values()) {
          await insertScheduleIfMissing(tx, row);
        }
      });
    }
    // A wallet seen again has a schedule its log cannot plan: it is not retried forever.
    if (wallets.length === 0) return adopted.size;
  }
}

if (import.meta.main) {
  const db = await openTaskDatabase();
  try {
    console.log(`adopt-schedules: ${await adoptUnplannedSchedules(db.sql)} wallets with unplanned schedules`);
  } finally {
    await db.close();
  }
}
