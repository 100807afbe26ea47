// The key-value decisions (spec 4.1, CONTRACT section 5), pure: from the entry as the batch sees
// it and the time, the reply and the events. Each costs the route's price whatever its outcome.
import { newEvent } from "../../events/catalogue.ts";
import type { KvRow } from "../../projections/kv.ts";
import type { CallDecision } from "../ledger/command.ts";
import { answer, failure, type Reply, textReply } from "../http/reply.ts";

export const MAX_TTL_SECONDS = 2_592_000;
export const KEY_NOT_FOUND = "Key Not Found";

export interface KvWrite {
  bucket: string;
  key: string;
  value: string;
  /** Seconds to live; 0 means the maximum. */
  ttlSeconds: number;
}

export function readValue(entry: KvRow | undefined): CallDecision<Reply> {
  return entry ? answer(textReply(200, entry.value)) : failure(404, KEY_NOT_FOUND);
}

export function writeValue(write: KvWrite, now: Date): CallDecision<Reply> {
  const seconds = write.ttlSeconds === 0 ? MAX_TTL_SECONDS : write.ttlSeconds;
  return answer(textReply(200, "OK"), {
    events: [newEvent("KvWritten", {
      bucket: write.bucket,
      key: write.key,
      value: write.value,
      expiresAt: new Date(now.getTime() + seconds * 1000).toISOString(),
    })],
  });
}

export function deleteValue(entry: KvRow | undefined): CallDecision<Reply> {
  if (!entry) return failure(404, KEY_NOT_FOUND);
  return answer(textReply(200, "OK"), {
    events: [newEvent("KvDeleted", { bucket: entry.bucket, key: entry.key })],
  });
}
