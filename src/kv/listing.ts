// Listing a bucket's live keys (issue 15), pure: a page of the table as the batch locked the wallet,
// with the batch's own earlier writes laid over it, cut to the limit, and an opaque cursor that
// resumes after the last key shown. A page may hold fewer keys than the limit (a key deleted in the
// same batch); only a null nextCursor says the listing is complete.
import type { KvBucketChanges, KvListedEntry, KvPage } from "../../projections/kv.ts";
import type { CallDecision } from "../ledger/command.ts";
import { answer, jsonReply, type Reply } from "../calls/reply.ts";
import { compareKeys } from "../../projections/kv_key_order.ts";
import { isStorable, quoteInput } from "../storable_text.ts";

export const MAX_LIST_LIMIT = 100;

export interface KvListing {
  bucket: string;
  prefix: string;
  /** Keys after this one (the cursor's), or from the start. */
  after?: string;
  limit: number;
}

/** Bytes of `text` in UTF-8, without encoding it. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The cursor that resumes a listing of `bucket` and `prefix` after `key`. */
export function encodeCursor(bucket: string, prefix: string, key: string): string {
  return base64url(JSON.stringify([bucket, prefix, key]));
}

/**
 * The key a cursor resumes after, or a 400 phrase when it is not a cursor this listing (the same
 * bucket and prefix) returned.
 */
export function decodeCursor(
  cursor: string,
  bucket: string,
  prefix: string,
): { after: string } | { phrase: string } {
  const phrase = `Invalid cursor ${
    quoteInput(cursor)
  }: must be a nextCursor of a listing of the same bucket and prefix`;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return { phrase };
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    const valid = Array.isArray(value) && value.length === 3 && value[0] === bucket && value[1] === prefix &&
      typeof value[2] === "string" && value[2].startsWith(prefix) && value[2].length > 0 &&
      // A key the service listed is storable; a forged "\u0000" would fail the page's query.
      isStorable(value[2]);
    return valid ? { after: value[2] } : { phrase };
  } catch {
    return { phrase };
  }
}

/** The page's entries with the batch's changes laid over them, in key order. */
function mergedEntries(
  listing: KvListing,
  page: KvPage,
  changes: KvBucketChanges,
  now: Date,
): KvListedEntry[] {
  const last = page.entries.at(-1)?.key;
  // Past the page's last entry, a truncated page knows nothing: such keys belong to the next page.
  const inRange = (key: string) =>
    key.startsWith(listing.prefix) &&
    (listing.after === undefined || compareKeys(key, listing.after) > 0) &&
    (!page.truncated || compareKeys(key, last!) <= 0);
  const entries = new Map(page.entries.map((entry) => [entry.key, entry]));
  for (const [key, row] of changes) {
    if (!inRange(key)) continue;
    if (row && row.expires_at > now) {
      entries.set(key, { key, expires_at: row.expires_at, size: utf8Length(row.value) });
    } else entries.delete(key);
  }
  return [...entries.values()].sort((a, b) => compareKeys(a.key, b.key));
}

/** The listing's answer: `{keys: [{key, expiresAt, size}], nextCursor}`. */
export function listKeys(
  listing: KvListing,
  { page, changes, now }: { page: KvPage | undefined; changes: KvBucketChanges | undefined; now: Date },
): CallDecision<Reply> {
  const snapshot = page ?? { entries: [], truncated: false };
  const entries = mergedEntries(listing, snapshot, changes ?? new Map(), now);
  const shown = entries.slice(0, listing.limit);
  const resumeAfter = entries.length > listing.limit
    ? shown.at(-1)!.key
    : snapshot.truncated
    ? snapshot.entries.at(-1)!.key
    : undefined;
  return answer(jsonReply(200, {
    keys: shown.map((e) => ({ key: e.key, expiresAt: e.expires_at.toISOString(), size: e.size })),
    nextCursor: resumeAfter === undefined ? null : encodeCursor(listing.bucket, listing.prefix, resumeAfter),
  }));
}
