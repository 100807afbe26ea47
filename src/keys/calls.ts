// One builder per key-management call (POST, GET and DELETE /token/keys): its price, its reads and
// its decision, for the wallet token only (no key access: a scoped key may not manage keys). The
// REST routes (http/routes/keys.ts) and the decision specs make their calls here.
import { read } from "../ledger/reads.ts";
import { scopedKeyRead, walletKeysRead } from "../../projections/scoped_keys.ts";
import { billedCall } from "../calls/billed_call.ts";
import { KEYS } from "../calls/prices.ts";
import { createKey, type KeyMaterial, type KeyRequest, listKeys, revokeKey } from "./commands.ts";

export const keyCalls = {
  /** POST /token/keys: a new key from fresh material, unless its expiry is past or the wallet is full. */
  create({ walletId, request, material }: { walletId: string; request: KeyRequest; material: KeyMaterial }) {
    return billedCall({
      price: KEYS.price,
      reads: { keys: read(walletKeysRead, walletId) },
      decide: ({ reads, now }) => createKey(request, { material, keys: reads.keys, now }),
    });
  },

  /** GET /token/keys: every key with its spend and last use. */
  list({ walletId }: { walletId: string }) {
    return billedCall({
      price: KEYS.price,
      reads: { keys: read(walletKeysRead, walletId) },
      decide: ({ reads, now }) => listKeys(reads.keys, now),
    });
  },

  /** DELETE /token/keys/{id}: KeyRevoked once; an unknown key is 404. */
  revoke({ walletId, keyId }: { walletId: string; keyId: string }) {
    return billedCall({
      price: KEYS.price,
      reads: { key: read(scopedKeyRead, { walletId, keyId }) },
      decide: ({ reads }) => revokeKey(keyId, reads.key),
    });
  },
};
