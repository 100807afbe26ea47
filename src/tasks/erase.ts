// `deno task erase <wallet hash>`: the operator's erasure of a wallet (a request received by other
// means than DELETE /token), through the ledger like every change. It needs no master key: the
// erasure destroys the wallet's data key without opening it. Prints one JSON line; exit 1 for a
// wallet that does not exist, 2 for a bad argument.
import { openTaskDatabase } from "./task_database.ts";
import { createServiceLedger } from "../service_ledger.ts";
import { systemClock } from "../clock.ts";
import { eraseWallet } from "../wallets/erasure.ts";

if (import.meta.main) {
  const walletId = Deno.args[0] ?? "";
  if (!/^[0-9a-f]{64}$/.test(walletId)) {
    console.error(
      `Invalid wallet hash "${walletId}": must be the 64 lowercase hex characters of GET /token's hash`,
    );
    Deno.exit(2);
  }
  const db = await openTaskDatabase();
  const started = performance.now();
  const result = await eraseWallet(db.sql, {
    ledger: createServiceLedger(db.sql, systemClock),
    walletId,
    by: "operator",
  });
  await db.close();
  const seconds = Number(((performance.now() - started) / 1000).toFixed(3));
  if (result.erased) console.log(JSON.stringify({ erased: walletId, ...result.counts, seconds }));
  else console.log(JSON.stringify({ erased: false, wallet: walletId, reason: result.reason }));
  Deno.exit(result.erased || result.reason === "already erased" ? 0 : 1);
}
