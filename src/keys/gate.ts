// What a scoped key may do, decided under the wallet's lock: every command a key makes reads the
// key's row with the batch's other reads, so a revocation, the expiry and the spend cap hold at
// once on every instance, whatever the callers' caches remember. Pure.
import type { BilledCommand, CallDecision, DecideState, Decision } from "../ledger/command.ts";
import { type Read, read, type ReadSet } from "../ledger/reads.ts";
import { type KeyScope, scopedKeyRead, type ScopedKeyRow } from "../../projections/scoped_keys.ts";
import { failure, type Reply, textReply } from "../http/reply.ts";

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
const REVOKED: Decision<Reply> = { outcome: textReply(401, KEY_REVOKED) };
const EXPIRED: Decision<Reply> = { outcome: textReply(401, KEY_EXPIRED) };

/** Whether a reply is the gate's 401: the caller answers it without billing headers. */
export function isKeyRefusal(reply: Reply): boolean {
  return reply === REVOKED.outcome || reply === EXPIRED.outcome;
}

/** The 401 of a key that is gone (revoked, swept) or past its expiry, or undefined. */
export function keyUnauthorized(key: ScopedKeyRow | undefined, now: Date): Decision<Reply> | undefined {
  if (!key || key.revoked_at) return REVOKED;
  if (key.expires_at && key.expires_at.getTime() <= now.getTime()) return EXPIRED;
  return undefined;
}

/** The 403 phrase when the key's scope or buckets do not cover the call, or undefined. */
export function keyForbids(key: ScopedKeyRow, access: KeyAccess | undefined): string | undefined {
  if (!access) return KEYS_NOT_ALLOWED;
  if (access.need === "write" && key.scope === "read") {
    return `Forbidden: key "${key.key_id}" is read-only: its scope "read" allows GET and list only`;
  }
  if (key.buckets && (access.bucket === undefined || !key.buckets.includes(access.bucket))) {
    return `Forbidden: key "${key.key_id}" may not use bucket "${access.bucket ?? ""}": ` +
      `it may use ${key.buckets.map((b) => `"${b}"`).join(", ")}`;
  }
  return undefined;
}

/** Whether charging `charge` more would take the key past its spend cap. */
function pastCap(key: ScopedKeyRow, charge: number): boolean {
  return key.spend_cap !== null && key.spent + charge > key.spend_cap;
}

/** A 402 that charges nothing, like every 402 (CONTRACT section 2), logged against the key. */
const capReached = (): CallDecision<Reply> => ({ ...failure(402, SPEND_CAP_REACHED), charge: 0 });

/**
 * What a key's call is decided by, in order: 401 when revoked or expired; 402 when its price would
 * pass the spend cap; 403 when the scope or buckets do not cover it (charged like other bad input
 * after authentication); else the call's own decision, still refused with 402 if what it charges
 * passes the cap.
 */
export function decideForKey(
  key: ScopedKeyRow | undefined,
  call: { access: KeyAccess | undefined; price: number; now: Date },
  decide: () => Decision<Reply>,
): Decision<Reply> {
  const gone = keyUnauthorized(key, call.now);
  if (gone || !key) return gone ?? REVOKED;
  if (pastCap(key, call.price)) return capReached();
  const forbidden = keyForbids(key, call.access);
  if (forbidden) return failure(403, forbidden);
  const decision = decide();
  if (decision.log && pastCap(key, decision.charge ?? call.price)) return capReached();
  return decision;
}

type KeyRead = { scopedKey: Read<ScopedKeyRow> };

/**
 * The command a key makes: the same command with the key's row among its reads, the key in its
 * call log, and its decisions passed through the gate. The wallet pays as for the token.
 */
export function commandOfKey<R extends ReadSet>(
  command: BilledCommand<Reply, R>,
  key: { keyId: string; access: KeyAccess | undefined },
): BilledCommand<Reply, R & KeyRead> {
  const reads = {
    ...command.reads,
    scopedKey: read(scopedKeyRead, { walletId: command.walletId, keyId: key.keyId }),
  } as R & KeyRead;
  const keyOf = (state: DecideState<R & KeyRead>) => state.reads.scopedKey as ScopedKeyRow | undefined;
  return {
    ...command,
    call: { ...command.call, keyId: key.keyId },
    reads,
    decide: (state) =>
      decideForKey(
        keyOf(state),
        { access: key.access, price: command.price, now: state.now },
        () => command.decide(state),
      ),
    // Below the price, a key that no longer authenticates still gets its 401, not a 402.
    unpaid: (state) => keyUnauthorized(keyOf(state), state.now) ?? command.unpaid(state),
  };
}
