// One builder per key-value call (spec 4.1, CONTRACT section 5): its price, what it needs of a
// scoped key, its reads and its decision. The REST routes (http/routes/kv.ts), the MCP tools
// (mcp/kv_tools.ts) and the decision specs make their calls here, so the three cannot drift apart.
import { read, type ReadSet } from "../ledger/reads.ts";
import { kvBucketChangesRead, kvBucketsRead, kvEntryRead, kvPageRead } from "../../projections/kv.ts";
import { type BilledCall, billedCall } from "../calls/billed_call.ts";
import { KV, KV_BUCKETS } from "../calls/prices.ts";
import { kvAccess } from "../calls/key_access.ts";
import { deleteValue, incrementValue, readValue, writeValue } from "./commands.ts";
import { type KvListing, listKeys } from "./listing.ts";
import { type KvBucketListing, listBuckets } from "./bucket_listing.ts";
import type { Preconditions } from "./preconditions.ts";

/** A key of a wallet's bucket. */
export interface KvEntryName {
  walletId: string;
  bucket: string;
  key: string;
}

/** Its price, and its key access by the method of its REST call. */
function billedAs(method: string, bucket: string) {
  return { price: KV.price, access: kvAccess(method, bucket) };
}

const entryRead = ({ walletId, bucket, key }: KvEntryName) => ({
  entry: read(kvEntryRead, { walletId, bucket, key }),
});

export const kvCalls = {
  /** GET /kv/{bucket}/{key}: the value and its ETag, or 404. */
  get(name: KvEntryName) {
    return billedCall({
      ...billedAs("GET", name.bucket),
      reads: entryRead(name),
      decide: ({ reads }) => readValue(reads.entry),
    });
  },

  /** POST /kv/{bucket}/{key}: the entry is read only for a conditional write; a plain write needs no read. */
  set(
    name: KvEntryName & { value: string; ttlSeconds: number; conditions?: Preconditions },
  ): BilledCall<ReadSet> {
    const { conditions, value, ttlSeconds } = name;
    const write = { bucket: name.bucket, key: name.key, value, ttlSeconds };
    if (!conditions) {
      return {
        ...billedAs("POST", name.bucket),
        decide: ({ now }) => writeValue(write, { now }),
      };
    }
    return billedCall({
      ...billedAs("POST", name.bucket),
      reads: entryRead(name),
      decide: ({ reads, now }) => writeValue(write, { now, entry: reads.entry, conditions }),
    });
  },

  /** DELETE /kv/{bucket}/{key}: 404 when there is no entry. */
  delete(name: KvEntryName & { conditions?: Preconditions }) {
    const conditions = name.conditions ?? {};
    return billedCall({
      ...billedAs("DELETE", name.bucket),
      reads: entryRead(name),
      decide: ({ reads }) => deleteValue(reads.entry, conditions),
    });
  },

  /** POST /kv/{bucket}/{key}/incr: adds `by`, a missing key counting as 0. */
  incr(name: KvEntryName & { by: number; ttlSeconds: number; conditions?: Preconditions }) {
    const conditions = name.conditions ?? {};
    const increment = { bucket: name.bucket, key: name.key, by: name.by, ttlSeconds: name.ttlSeconds };
    return billedCall({
      ...billedAs("POST", name.bucket),
      reads: entryRead(name),
      decide: ({ reads, now }) => incrementValue(increment, { entry: reads.entry, now, conditions }),
    });
  },

  /** GET /kv/{bucket}: a page as the wallet's lock sees it, with the batch's earlier writes laid over it. */
  list({ walletId, ...listing }: KvListing & { walletId: string }) {
    return billedCall({
      ...billedAs("GET", listing.bucket),
      reads: {
        page: read(kvPageRead, { walletId, ...listing }),
        changes: read(kvBucketChangesRead, { walletId, bucket: listing.bucket }),
      },
      decide: ({ reads, now }) => listKeys(listing, { page: reads.page, changes: reads.changes, now }),
    });
  },

  /** GET /kv: a page of the wallet's bucket names; not open to scoped keys. */
  buckets({ walletId, ...listing }: KvBucketListing & { walletId: string }) {
    return billedCall({
      price: KV_BUCKETS.price,
      reads: { walked: read(kvBucketsRead, { walletId, ...listing }) },
      decide: ({ reads }) => listBuckets(listing, reads.walked ?? []),
    });
  },
};
