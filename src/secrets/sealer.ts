// What the ledger and replay use: seal a batch's events before they are appended, open a page of
// the log after it is read. The keys a batch needs are loaded (or made) before its transaction
// begins, so the transaction waits on no key lookup.
import type { StoredEvent } from "../../events/catalogue.ts";
import type { DataKeys } from "./data_keys.ts";
import { openEvent, sealEventData } from "./event_sealing.ts";

export interface EventSealer {
  /** Loads, or makes, the data keys of these wallets before their transaction. */
  prepare(walletIds: Iterable<string>): Promise<void>;
  /** The data to store for each event, in order. */
  seal(events: StoredEvent[]): Promise<unknown[]>;
  /** Told after an erasure committed: this instance forgets the wallet's key at once. */
  forget(walletId: string): void;
}

export function createEventSealer(keys: DataKeys): EventSealer {
  return {
    async prepare(walletIds) {
      await keys.keysFor(walletIds, { create: true });
    },
    async seal(events) {
      if (events.length === 0) return [];
      const found = await keys.keysFor(events.map((e) => e.walletId), { create: true });
      return events.map((e) => sealEventData(e, found.get(e.walletId) ?? null));
    },
    forget: (walletId) => keys.forget(walletId),
  };
}

/** A page of the log with its sealed fields opened (erased wallets' read "[erased]"). */
export async function openEvents(keys: DataKeys, events: StoredEvent[]): Promise<StoredEvent[]> {
  const found = await keys.keysFor(events.map((e) => e.walletId), { create: false });
  return events.map((e) => openEvent(e, found.get(e.walletId)));
}
