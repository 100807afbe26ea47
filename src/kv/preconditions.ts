// Conditional requests on KV entries (RFC 9110 section 13): an entry's ETag is the stream version of
// the event that last wrote it, so it changes on every write and never comes back. The check runs
// inside the command's decision, on the entry as the wallet's lock and the batch's earlier
// commands leave it, so two clients holding the same ETag cannot both write.
import type { KvRow } from "../../projections/kv.ts";

/** `*`, or a list of entity tags; weak ones (W/"...") never match If-Match (strong comparison). */
export type EtagCondition = { any: true } | { any: false; tags: { weak: boolean; opaque: string }[] };

export interface Preconditions {
  ifMatch?: EtagCondition;
  ifNoneMatch?: EtagCondition;
}

const TAG = String.raw`(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"`;
/** A header value of If-Match or If-None-Match: `*` or a comma-separated list of entity tags. */
export const ETAG_CONDITION = new RegExp(String.raw`^\s*(?:\*|${TAG}(?:\s*,\s*${TAG})*)\s*$`);
export const ETAG_CONDITION_RULE = 'must be * or a list of quoted ETags such as "12"';

/** The ETag header value of an entry: its version, quoted (a strong tag). */
export function etagOf(entry: KvRow): string {
  return `"${entry.version}"`;
}

/** Parses a header that matched ETAG_CONDITION. */
export function parseEtagCondition(header: string): EtagCondition {
  if (header.trim() === "*") return { any: true };
  const tags = [...header.matchAll(/(W\/)?"([^"]*)"/g)].map((m) => ({
    weak: m[1] !== undefined,
    opaque: m[2],
  }));
  return { any: false, tags };
}

function matches(condition: EtagCondition, entry: KvRow, weakComparison: boolean): boolean {
  if (condition.any) return true;
  const current = String(entry.version);
  return condition.tags.some((tag) => tag.opaque === current && (weakComparison || !tag.weak));
}

/**
 * Why the request's preconditions fail on the entry (undefined: they hold). If-Match is checked
 * first, as RFC 9110 section 13.2.2 orders them.
 */
export function preconditionFailure(entry: KvRow | undefined, conditions: Preconditions): string | undefined {
  const { ifMatch, ifNoneMatch } = conditions;
  if (ifMatch && !entry) return "Precondition Failed: If-Match names an entry but the key is missing";
  if (ifMatch && entry && !matches(ifMatch, entry, false)) {
    return `Precondition Failed: If-Match does not match the entry's ETag, it changed since it was read`;
  }
  if (ifNoneMatch && entry && matches(ifNoneMatch, entry, true)) {
    return ifNoneMatch.any
      ? "Precondition Failed: If-None-Match: * but the key exists"
      : "Precondition Failed: If-None-Match matches the entry's ETag";
  }
  return undefined;
}
