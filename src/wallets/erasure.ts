// Erasure on request (DELETE /token, deno task erase): the wallet's data key is destroyed, so every
// sensitive field of its events reads as erased from then on (crypto-shredding the append-only
// log); WalletErased takes its rows out of every read model but payments (money), the token answers
// 401 like a deactivated one, and the effect below deletes what no read model folds: queued
// deliveries (email bodies), attachments and schedule claims. The money stays: the audit still sums.
import type { Queryable, Sql, Tx } from "../db/connect.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Effect, UnbilledCommand } from "../ledger/command.ts";
import type { EffectApplier } from "../ledger/pending_writes.ts";
import { newEvent } from "../../events/catalogue.ts";
import { destroyDataKey } from "../secrets/data_keys.ts";
import type { EventSealer } from "../secrets/sealer.ts";

/** What an erasure removed, as WalletErased records it and DELETE /token answers it. */
export interface ErasedCounts {
  kvEntries: number;
  webhooks: number;
  keys: number;
  attachments: number;
}

export type ErasureOutcome =
  | { erased: true; counts: ErasedCounts }
  | { erased: false; reason: "unknown wallet" | "already erased" };

/** Deletes the wallet's rows outside the read models and destroys its data key, in the same transaction. */
export interface EraseWallet extends Effect {
  type: "eraseWallet";
  walletId: string;
}

/** The event and effect of an erasure: the same for the owner's call and the operator's task. */
export function erasure(walletId: string, by: "owner" | "operator", counts: ErasedCounts) {
  return {
    events: [newEvent("WalletErased", { by, ...counts })],
    effects: [{ type: "eraseWallet", walletId } satisfies EraseWallet],
  };
}

/** The operator's erasure (deno task erase): unbilled, under the wallet's lock. */
export function eraseCommand(
  walletId: string,
  by: "owner" | "operator",
  counts: ErasedCounts,
): UnbilledCommand<ErasureOutcome> {
  return {
    walletId,
    decide({ wallet }) {
      if (!wallet) return { outcome: { erased: false, reason: "unknown wallet" } };
      return { outcome: { erased: true, counts }, ...erasure(walletId, by, counts) };
    },
  };
}

/** The applier of EraseWallet; `sealer` forgets the key on this instance once the erasure committed. */
export function eraseWallets(sealer?: EventSealer): EffectApplier<EraseWallet> {
  return {
    async apply(tx: Tx, effects: EraseWallet[], now: Date) {
      for (const { walletId } of effects) {
        await Promise.all([
          tx`delete from webhook_deliveries where wallet_id = ${walletId}`,
          tx`delete from attachments where wallet_id = ${walletId}`,
          tx`delete from attachment_usage where wallet_id = ${walletId}`,
          tx`delete from schedule_claims where wallet_id = ${walletId}`,
          destroyDataKey(tx, walletId, now),
        ]);
      }
    },
    afterCommit(effects) {
      for (const { walletId } of effects) sealer?.forget(walletId);
    },
  };
}

/** Whether the wallet was erased already (its key row is keyless). */
export async function isErased(sql: Queryable, walletId: string): Promise<boolean> {
  const [row] = await sql<{ erased: boolean }[]>`
    select erased_at is not null as erased from wallet_keys where wallet_id = ${walletId}`;
  return row?.erased ?? false;
}

/** What an erasure of the wallet would remove now (read just before it). */
export async function countsOf(sql: Sql, walletId: string): Promise<ErasedCounts> {
  const [row] = await sql<ErasedCounts[]>`
    select (select count(*) from kv_entries where wallet_id = ${walletId})::int as "kvEntries",
           (select count(*) from webhooks where wallet_id = ${walletId})::int as webhooks,
           (select count(*) from scoped_keys where wallet_id = ${walletId})::int as keys,
           (select count(*) from attachments where wallet_id = ${walletId})::int as attachments`;
  return row;
}

/** Erases a wallet through the ledger; the counts are read just before (what the erasure removes). */
export async function eraseWallet(
  sql: Sql,
  { ledger, walletId, by }: { ledger: Ledger; walletId: string; by: "owner" | "operator" },
): Promise<ErasureOutcome> {
  if (await isErased(sql, walletId)) return { erased: false, reason: "already erased" };
  return await ledger.appendUnbilled(eraseCommand(walletId, by, await countsOf(sql, walletId)));
}
