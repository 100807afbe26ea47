// Replay's fold: the projections' own evolve steps applied to one wallet's stream at a time.
// Every read model is keyed per wallet, so a wallet's rows are final once its stream ends, and
// only that wallet's state is held; insert-only models (call logs) hand their rows out at once.
import type { StoredEvent } from "../../events/catalogue.ts";
import { type Projection, removesWalletRows } from "../../projections/projection.ts";

type Row = Record<string, unknown>;

/** Written once per event and never changed or removed with the wallet: no state to keep. */
function insertOnly(projection: Projection<any>): boolean {
  return projection.insertOnly === true && !projection.removedWithWallet;
}

export interface WalletFold {
  /** Applies the next event; a new wallet id first hands out the finished wallet's rows. */
  apply(event: StoredEvent): void;
  /** Hands out the last wallet's rows. */
  finish(): void;
}

/** Folds wallet by wallet and passes every finished row to `emit` with its projection's index. */
export function walletFold(
  projections: Projection<any>[],
  emit: (index: number, row: Row) => void,
  options: { isErased?: (walletId: string) => boolean } = {},
): WalletFold {
  const states = projections.map(() => new Map<string, Row>());
  const streaming = projections.map(insertOnly);
  let wallet: string | undefined;
  // An erased wallet's call logs leave with its WalletErased: they are held like any other rows.
  let erased = false;

  function emitChecked(index: number, row: Row) {
    // The invariant that makes folding wallet by wallet equal to folding the log in order.
    if (row.wallet_id !== wallet) {
      throw new Error(
        `Replay of wallet "${wallet}" made a ${projections[index].table} row of wallet "${row.wallet_id}": ` +
          "every read model must be keyed per wallet",
      );
    }
    emit(index, row);
  }

  function finishWallet() {
    states.forEach((state, index) => {
      for (const row of state.values()) emitChecked(index, row);
      state.clear();
    });
  }

  return {
    apply(event) {
      if (event.walletId !== wallet) {
        finishWallet();
        wallet = event.walletId;
        erased = options.isErased?.(wallet) ?? false;
      }
      projections.forEach((projection, index) => {
        if (removesWalletRows(projection, event)) return states[index].clear();
        const key = projection.keyOf(event);
        if (key === null) return;
        if (streaming[index] && !erased) {
          const row = projection.evolve(undefined, event);
          if (row !== undefined) emitChecked(index, row);
          return;
        }
        const next = projection.evolve(states[index].get(key), event);
        if (next === undefined) states[index].delete(key);
        else states[index].set(key, next);
      });
    },
    finish: finishWallet,
  };
}
