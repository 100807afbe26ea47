// The key-value decisions (spec 4.1, CONTRACT section 5, issue 15), pure: from the entry as the batch
// sees it, the request's preconditions and the time, the reply and the events. Each costs the
// route's price whatever its outcome, a failed precondition (412) included.
import { newEvent } from "../../events/catalogue.ts";
import type { KvRow } from "../../projections/kv.ts";
import type { CallDecision } from "../ledger/command.ts";
import { answer, failure, type Reply, textReply } from "../calls/reply.ts";
import { etagOf, preconditionFailure, type Preconditions } from "./preconditions.ts";
import { quoteInput } from "../storable_text.ts";

export const MAX_TTL_SECONDS = 2_592_000;
export const KEY_NOT_FOUND = "Key Not Found";
/** Counters stay where every value is exact in a double: ±(2^53 − 1). */
export const MAX_COUNTER = Number.MAX_SAFE_INTEGER;

/** Replies of KV calls: a read names the entry's ETag in its headers. */
export type KvReply = Reply;

export interface KvWrite {
  bucket: string;
  key: string;
  value: string;
  /** Seconds to live; 0 means the maximum. */
  ttlSeconds: number;
}

export interface KvIncrement {
  bucket: string;
  key: string;
  by: number;
  /** Seconds to live of a key the increment creates; 0 means the maximum. */
  ttlSeconds: number;
}

function expiryAfter(now: Date, ttlSeconds: number): string {
  const seconds = ttlSeconds === 0 ? MAX_TTL_SECONDS : ttlSeconds;
  return new Date(now.getTime() + seconds * 1000).toISOString();
}

/** 412 when the preconditions fail on the entry, else undefined. */
function refused(entry: KvRow | undefined, conditions: Preconditions): CallDecision<KvReply> | undefined {
  const phrase = preconditionFailure(entry, conditions);
  return phrase === undefined ? undefined : failure(412, phrase);
}

export function readValue(entry: KvRow | undefined): CallDecision<KvReply> {
  if (!entry) return failure(404, KEY_NOT_FOUND);
  const reply: KvReply = { ...textReply(200, entry.value), headers: { etag: etagOf(entry) } };
  return answer(reply);
}

/** A write; `entry` matters only to the preconditions, and is read only when there are some. */
export function writeValue(
  write: KvWrite,
  { now, entry, conditions = {} }: { now: Date; entry?: KvRow; conditions?: Preconditions },
): CallDecision<KvReply> {
  return refused(entry, conditions) ?? answer(textReply(200, "OK"), {
    events: [newEvent("KvWritten", {
      bucket: write.bucket,
      key: write.key,
      value: write.value,
      expiresAt: expiryAfter(now, write.ttlSeconds),
    })],
  });
}

export function deleteValue(entry: KvRow | undefined, conditions: Preconditions = {}): CallDecision<KvReply> {
  const precondition = refused(entry, conditions);
  if (precondition) return precondition;
  if (!entry) return failure(404, KEY_NOT_FOUND);
  return answer(textReply(200, "OK"), {
    events: [newEvent("KvDeleted", { bucket: entry.bucket, key: entry.key })],
  });
}

/** The integer a stored value spells, or undefined: optional "-", decimal digits, within ±MAX_COUNTER. */
export function counterValue(value: string): number | undefined {
  if (!/^-?\d{1,16}$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n + 0 : undefined;
}

/**
 * Adds `by` to the key's integer value, a missing key counting as 0. A new key gets the requested
 * TTL; an existing one keeps its expiry. The answer is the new value as text.
 */
export function incrementValue(
  increment: KvIncrement,
  { entry, now, conditions = {} }: { entry: KvRow | undefined; now: Date; conditions?: Preconditions },
): CallDecision<KvReply> {
  const precondition = refused(entry, conditions);
  if (precondition) return precondition;
  const current = entry ? counterValue(entry.value) : 0;
  if (current === undefined) {
    return failure(
      409,
      // Quoted by code points: a cut by UTF-16 units could split a pair into an unstorable half.
      `Cannot increment ${
        quoteInput(entry!.value)
      }: the value must be an integer from -${MAX_COUNTER} to ${MAX_COUNTER}`,
    );
  }
  const value = current + increment.by; // exact: both are safe integers, so the sum is below 2^54
  if (!Number.isSafeInteger(value)) {
    return failure(
      409,
      `Cannot increment ${current} by ${increment.by}: the result must be from -${MAX_COUNTER} to ${MAX_COUNTER}`,
    );
  }
  const expiresAt = entry ? entry.expires_at.toISOString() : expiryAfter(now, increment.ttlSeconds);
  return answer(textReply(200, String(value)), {
    events: [
      newEvent("KvIncremented", {
        bucket: increment.bucket,
        key: increment.key,
        by: increment.by,
        value,
        expiresAt,
      }),
    ],
  });
}
