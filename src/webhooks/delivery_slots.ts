// How an instance's delivery slots are shared out (issue 21): each attempt in flight holds one, a
// wallet at most its share and one endpoint of a wallet (a webhook, an alert channel) less, so a
// wallet whose endpoint never answers holds a few slots for 10 s each and every other wallet keeps
// the rest. Per instance: each instance shares out its own slots.
// The shares themselves are configuration (config.ts: deliverySlots, DEFAULT_SLOTS).
import type { ClaimedDelivery } from "./outbox.ts";
import { endpointKey, endpointOf, type SlotsInUse } from "./delivery_claims.ts";
export { DEFAULT_SLOTS, type DeliverySlots, deliverySlots } from "../config.ts";

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
