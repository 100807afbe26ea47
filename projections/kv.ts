// The key-value read model: the live value of each (bucket, key) with its expiry and the stream
// version of the event that last wrote it (the entry's ETag), plus the reads KV commands declare.
import type { Queryable } from "../src/db/connect.ts";
import type { StoredEvent } from "../events/catalogue.ts";
import { defineProjection, type ReadKind, rowId, rowRead } from "./projection.ts";
import { prefixEnd } from "../src/kv/key_order.ts";

export interface KvRow {
  wallet_id: string;
  bucket: string;
  key: string;
  value: string;
  expires_at: Date;
  /** The wallet stream version of the KvWritten or KvIncremented that left this value. */
  version: number;
}

type KvEvent = Extract<StoredEvent, { type: "KvWritten" | "KvDeleted" | "KvIncremented" }>;

function isKvEvent(event: StoredEvent): event is KvEvent {
  return event.type === "KvWritten" || event.type === "KvDeleted" || event.type === "KvIncremented";
}

/** The row a KV event leaves, without the previous one: every event carries the whole entry. */
function kvRowOf(event: KvEvent): KvRow | undefined {
  if (event.type === "KvDeleted") return undefined;
  const { bucket, key, value, expiresAt } = event.data;
  return {
    wallet_id: event.walletId,
    bucket,
    key,
    value: String(value),
    expires_at: new Date(expiresAt),
    version: event.version,
  };
}

export const kvProjection = defineProjection<KvRow>({
  table: "kv_entries",
  columns: ["wallet_id", "bucket", "key", "value", "expires_at", "version"],
  keyColumns: ["wallet_id", "bucket", "key"],
  keyRow: (event) =>
    isKvEvent(event) ? { wallet_id: event.walletId, bucket: event.data.bucket, key: event.data.key } : null,
  evolve: (_row, event) => isKvEvent(event) ? kvRowOf(event) : undefined,
  readsPrevious: false,
  liveFilter: "expires_at > now()",
  removedWithWallet: true,
});

/** The live value of a key, or undefined when it is missing or expired. */
export async function readKv(
  sql: Queryable,
  { walletId, bucket, key, now }: { walletId: string; bucket: string; key: string; now: Date },
): Promise<string | undefined> {
  const [row] = await sql<{ value: string }[]>`
    select value from kv_entries
    where wallet_id = ${walletId} and bucket = ${bucket} and key = ${key} and expires_at > ${now}`;
  return row?.value;
}

export interface KvEntryKey {
  walletId: string;
  bucket: string;
  key: string;
}

/** A live entry as a ledger read: the entries of a whole batch are loaded in one query. */
export const kvEntryRead = rowRead<KvEntryKey, KvRow>(kvProjection, {
  name: "kv entry",
  keyRow: ({ walletId, bucket, key }) => ({ wallet_id: walletId, bucket, key }),
  async load(sql, keys, now) {
    // A lateral lookup per key: the primary key's index, whatever the planner guesses of the list.
    return await sql<KvRow[]>`
      select kv.* from unnest(${keys.map((k) => k.walletId)}::text[], ${keys.map((k) => k.bucket)}::text[],
                              ${keys.map((k) => k.key)}::text[]) as x(w, b, k)
      cross join lateral (select * from kv_entries e
                          where e.wallet_id = x.w and e.bucket = x.b and e.key = x.k and e.expires_at > ${now}) kv`;
  },
});

/** One page of a bucket's live keys: those after `after` that start with `prefix`, in key order. */
export interface KvPageKey {
  walletId: string;
  bucket: string;
  prefix: string;
  after?: string;
  limit: number;
}

/** What a listing shows of an entry. */
export interface KvListedEntry {
  key: string;
  expires_at: Date;
  /** Bytes of the value in UTF-8. */
  size: number;
}

export interface KvPage {
  /** At most limit + 1 entries in key order, taken when the batch locked the wallet. */
  entries: KvListedEntry[];
  /** The page holds limit + 1 entries: keys after its last one were not looked at. */
  truncated: boolean;
}

/**
 * A page as a ledger read: a snapshot taken in the batch's lock round trip, one statement for the
 * whole batch. Writes of the same batch are not in it; `kvBucketChangesRead` carries those, and
 * the listing decision lays them over the page.
 */
export const kvPageRead: ReadKind<KvPageKey, KvPage> = {
  name: "kv page",
  id: (key) => rowId(["walletId", "bucket", "prefix", "after", "limit"], key),
  async load(sql, keys, now) {
    const ranges = keys.map((k, i) => ({
      i,
      w: k.walletId,
      b: k.bucket,
      p: k.prefix,
      a: k.after ?? null,
      u: prefixEnd(k.prefix) ?? null,
      l: k.limit + 1,
    }));
    const rows = await sql<{ i: number; key: string; expires_at: Date; size: number }[]>`
      select x.i, kv.key, kv.expires_at, kv.size
      from jsonb_to_recordset(${sql.json(ranges)}) as x(i int, w text, b text, p text, a text, u text, l int)
      cross join lateral (
        select key, expires_at, octet_length(value) as size from kv_entries
        where wallet_id = x.w and bucket = x.b and key >= x.p collate "C"
          and (x.a is null or key > x.a collate "C") and (x.u is null or key < x.u collate "C")
          and expires_at > ${now}
        order by key collate "C" limit x.l
      ) kv
      order by x.i, kv.key collate "C"`;
    const pages = keys.map(() => [] as KvListedEntry[]);
    for (const { i, ...entry } of rows) pages[i].push(entry);
    return new Map(keys.map((key, i) => [
      kvPageRead.id(key),
      { entries: pages[i], truncated: pages[i].length > key.limit },
    ]));
  },
  touches: () => [],
  evolve: (page) => page,
};

/** A bucket's entries written (a row) or deleted (null) by the batch so far, by key. */
export type KvBucketChanges = ReadonlyMap<string, KvRow | null>;

/** A bucket's id, from a read's key and from an event alike. */
function bucketId(walletId: string, bucket: string): string {
  return rowId(["walletId", "bucket"], { walletId, bucket });
}

/** The batch's own writes to a bucket, kept as a read: loaded empty, folded from the staged events. */
export const kvBucketChangesRead: ReadKind<{ walletId: string; bucket: string }, KvBucketChanges> = {
  name: "kv bucket changes",
  id: ({ walletId, bucket }) => bucketId(walletId, bucket),
  load: (_sql, keys) => Promise.resolve(new Map(keys.map((key) => [kvBucketChangesRead.id(key), new Map()]))),
  touches: (event) => isKvEvent(event) ? [bucketId(event.walletId, event.data.bucket)] : [],
  evolve(changes, event) {
    if (!isKvEvent(event)) return changes;
    return new Map(changes).set(event.data.key, kvRowOf(event) ?? null);
  },
};

/** Removes expired entries; they already read as missing, this only reclaims space. */
export async function sweepExpiredKv(sql: Queryable, now: Date): Promise<number> {
  const rows = await sql`delete from kv_entries where expires_at <= ${now} returning 1`;
  return rows.length;
}

/** A page of a wallet's bucket names: those after `after` that start with `prefix`. */
export interface KvBucketsKey {
  walletId: string;
  prefix: string;
  after?: string;
  limit: number;
}

/** A bucket name as the walk found it: whether it has the prefix, and a key that has not expired. */
export interface KvWalkedBucket {
  bucket: string;
  matches: boolean;
  live: boolean;
}

/** Distinct bucket names one page looks at, at most: bounds a walk past names without the prefix. */
export const MAX_BUCKETS_WALKED = 1000;

/**
 * The wallet's bucket names after `after`, in the order of the primary key's index (the database's
 * order of text), one index descent each (a recursive walk), until `limit` + 1 names with the
 * prefix or MAX_BUCKETS_WALKED names. Each says whether it has a live key. A snapshot of the lock
 * round trip: a bucket made by an earlier call of the same batch is not in it.
 */
export const kvBucketsRead: ReadKind<KvBucketsKey, KvWalkedBucket[]> = {
  name: "kv buckets",
  id: (key) => rowId(["walletId", "prefix", "after", "limit"], key),
  async load(sql, keys, now) {
    const pages = await Promise.all(keys.map(async (key) => {
      const after = key.after ?? null;
      return await sql<KvWalkedBucket[]>`
        with recursive walk(bucket, steps, found) as (
          (select bucket, 1, (starts_with(bucket, ${key.prefix}))::int from kv_entries
           where wallet_id = ${key.walletId} and (${after}::text is null or bucket > ${after}::text)
           order by bucket limit 1)
          union all
          select next.bucket, walk.steps + 1, walk.found + (starts_with(next.bucket, ${key.prefix}))::int
          from walk cross join lateral (
            select e.bucket from kv_entries e where e.wallet_id = ${key.walletId} and e.bucket > walk.bucket
            order by e.bucket limit 1) next
          where walk.steps < ${MAX_BUCKETS_WALKED} and walk.found <= ${key.limit})
        select bucket, starts_with(bucket, ${key.prefix}) as matches,
               exists (select 1 from kv_entries e where e.wallet_id = ${key.walletId} and e.bucket = walk.bucket
                         and e.expires_at > ${now}) as live
        from walk order by steps`;
    }));
    return new Map(keys.map((key, i) => [kvBucketsRead.id(key), pages[i]]));
  },
  touches: () => [],
  evolve: (page) => page,
};
