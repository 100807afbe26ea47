// How an instance's delivery slots are shared out (issue 21): each attempt in flight holds one, a
// wallet at most its share and one endpoint of a wallet (a webhook, an alert channel) less, so a
// wallet whose endpoint never answers holds a few slots for 10 s each and every other wallet keeps
// the rest. Per instance: each instance shares out its own slots.
import { type ClaimedDelivery, endpointKey, endpointOf, type SlotShares, type SlotsInUse } from "./outbox.ts";

export interface DeliverySlots extends SlotShares {
  /** Attempts in flight at once in this instance. */
  total: number;
}

/** DELIVERY_SLOTS, DELIVERY_SLOTS_PER_WALLET and DELIVERY_SLOTS_PER_ENDPOINT by default. */
export const DEFAULT_SLOTS: DeliverySlots = { total: 32, perWallet: 4, perEndpoint: 2 };

/** The shares as configured, each at most the one it is part of. */
export function deliverySlots(total: number, perWallet: number, perEndpoint: number): DeliverySlots {
  const wallet = Math.min(perWallet, total);
  return { total, perWallet: wallet, perEndpoint: Math.min(perEndpoint, wallet) };
}

/** The slots the attempts in flight hold, per wallet and per endpoint of a wallet. */
export function slotsInUse(inFlight: Iterable<ClaimedDelivery>): SlotsInUse {
  const wallets = new Map<string, number>();
  const endpoints = new Map<string, number>();
  for (const delivery of inFlight) {
    wallets.set(delivery.walletId, (wallets.get(delivery.walletId) ?? 0) + 1);
    const key = endpointKey(delivery.walletId, endpointOf(delivery));
    endpoints.set(key, (endpoints.get(key) ?? 0) + 1);
  }
  return { wallets, endpoints };
}
