// What a scoped key may do, decided under the wallet's lock: every command a key makes reads the
// key's row with the batch's other reads, so a revocation, the expiry and the spend cap hold at
// once on every instance, whatever the callers' caches remember. The ledger runs the key's gate
// before anything is charged or replayed, so no sequence of calls takes a key past its cap. Pure.
import type { BilledCommand, CallDecision, CallGate, DecideState, NoCall } from "../ledger/command.ts";
import { type Read, read, type ReadSet } from "../ledger/reads.ts";
import { type KeyScope, scopedKeyRead, type ScopedKeyRow } from "../../projections/scoped_keys.ts";
import { failure, type Reply, textReply } from "./reply.ts";
import { quoteInput } from "../storable_text.ts";

/** What a call needs of a key: a scope and, for a bucket's data, the bucket. */
export interface KeyAccess {
  need: KeyScope;
  bucket?: string;
}

export const KEY_REVOKED = "Key revoked";
export const KEY_EXPIRED = "Key expired";
export const SPEND_CAP_REACHED = "Spend cap reached";
export const KEYS_NOT_ALLOWED =
  "Forbidden: a scoped key may call only the key-value routes and /mcp; this route needs the wallet token";

/** The answers of a key that no longer authenticates: no call happened, nothing is charged or logged. */
const REVOKED: NoCall<Reply> = { outcome: textReply(401, KEY_REVOKED) };
const EXPIRED: NoCall<Reply> = { outcome: textReply(401, KEY_EXPIRED) };

/** Whether a reply is the gate's 401: the caller answers it without billing headers. */
export function isKeyRefusal(reply: Reply): boolean {
  return reply === REVOKED.outcome || reply === EXPIRED.outcome;
}

/** The 401 of a key that is gone (revoked, swept) or past its expiry, or undefined. */
export function keyUnauthorized(key: ScopedKeyRow | undefined, now: Date): NoCall<Reply> | undefined {
  if (!key || key.revoked_at) return REVOKED;
  if (key.expires_at && key.expires_at.getTime() <= now.getTime()) return EXPIRED;
  return undefined;
}

/** The 403 phrase when the key's scope or buckets do not cover the call, or undefined. */
export function keyForbids(key: ScopedKeyRow, access: KeyAccess | undefined): string | undefined {
  if (!access) return KEYS_NOT_ALLOWED;
  if (access.need === "write" && key.scope === "read") {
    return `Forbidden: key ${quoteInput(key.key_id)} is read-only: its scope "read" allows GET and list only`;
  }
  if (key.buckets && (access.bucket === undefined || !key.buckets.includes(access.bucket))) {
    return `Forbidden: key ${quoteInput(key.key_id)} may not use bucket ${
      quoteInput(access.bucket ?? "")
    }: ` +
      `it may use ${key.buckets.map((b) => quoteInput(b)).join(", ")}`;
  }
  return undefined;
}

/** Whether charging `charge` more would take the key past its spend cap. */
function pastCap(key: ScopedKeyRow, charge: number): boolean {
  return key.spend_cap !== null && key.spent + charge > key.spend_cap;
}

/** A 402 that charges nothing, like every 402 (CONTRACT section 2), logged against the key. */
const capReached = (): CallDecision<Reply> => ({ ...failure(402, SPEND_CAP_REACHED), charge: 0 });

type KeyRead = { scopedKey: Read<ScopedKeyRow> };

/**
 * A key's rules as the ledger applies them, before anything is charged or replayed (see
 * chooseDecision): 401 when revoked or expired (no call); 402 when a charge would pass the spend
 * cap; 403 when the scope or buckets do not cover the call (charged like other bad input after
 * authentication, within the cap like any charge).
 */
export function keyGate<R extends ReadSet>(access: KeyAccess | undefined): CallGate<Reply, R & KeyRead> {
  const keyOf = (state: DecideState<R & KeyRead>) => state.reads.scopedKey as ScopedKeyRow | undefined;
  return {
    unauthorized: (state) => keyUnauthorized(keyOf(state), state.now),
    forbidden: (state) => {
      const forbidden = keyForbids(keyOf(state)!, access);
      return forbidden ? failure(403, forbidden) : undefined;
    },
    overSpend: (state, charge) => pastCap(keyOf(state)!, charge) ? capReached() : undefined,
  };
}

/**
 * The command a key makes: the same command with the key's row among its reads, the key in its
 * call log (and so in its Idempotency-Key's owner), and the key's gate. The wallet pays as for the
 * token.
 */
export function commandOfKey<R extends ReadSet>(
  command: BilledCommand<Reply, R>,
  key: { keyId: string; access: KeyAccess | undefined },
): BilledCommand<Reply, R & KeyRead> {
  const reads = {
    ...command.reads,
    scopedKey: read(scopedKeyRead, { walletId: command.walletId, keyId: key.keyId }),
  } as R & KeyRead;
  return {
    ...command,
    call: { ...command.call, keyId: key.keyId },
    reads,
    gate: keyGate<R>(key.access),
  } as BilledCommand<Reply, R & KeyRead>;
}
