// The scoped-key read model: each key's rules (scope, buckets, cap, expiry), what its calls were
// charged so far and when it was last used, folded from KeyCreated, KeyRevoked and the CallBilled
// events that carry its keyId. A key revoked or expired more than a week ago is swept away.
import type { Queryable } from "../src/db/connect.ts";
import type { StoredEvent } from "../events/catalogue.ts";
import { defineProjection, rowRead, walletRowsRead } from "./projection.ts";

/** How long a revoked or expired key stays listed: as long as the call logs that name it. */
export const RETIRED_KEY_KEPT_MS = 7 * 24 * 3600 * 1000;

export type KeyScope = "read" | "write";

export interface ScopedKeyRow {
  wallet_id: string;
  key_id: string;
  name: string;
  key_hash: string;
  scope: KeyScope;
  buckets: string[] | null;
  spend_cap: number | null;
  expires_at: Date | null;
  created_at: Date;
  spent: number;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const COLUMNS = [
  "wallet_id",
  "key_id",
  "name",
  "key_hash",
  "scope",
  "buckets",
  "spend_cap",
  "expires_at",
  "created_at",
  "spent",
  "last_used_at",
  "revoked_at",
] as const;

/** The key id an event is about, or null. */
function keyIdOf(event: StoredEvent): string | null {
  if (event.type === "KeyCreated" || event.type === "KeyRevoked") return event.data.keyId;
  if (event.type === "CallBilled") return event.data.keyId ?? null;
  return null;
}

export function evolveScopedKey(row: ScopedKeyRow | undefined, event: StoredEvent): ScopedKeyRow | undefined {
  if (event.type === "KeyCreated") {
    const d = event.data;
    return {
      wallet_id: event.walletId,
      key_id: d.keyId,
      name: d.name,
      key_hash: d.hash,
      scope: d.scope,
      buckets: d.buckets ?? null,
      spend_cap: d.spendCap ?? null,
      expires_at: d.expiresAt ? new Date(d.expiresAt) : null,
      created_at: event.recordedAt,
      spent: 0,
      last_used_at: null,
      revoked_at: null,
    };
  }
  if (!row) return undefined;
  if (event.type === "KeyRevoked") return { ...row, revoked_at: row.revoked_at ?? event.recordedAt };
  if (event.type === "CallBilled") {
    return { ...row, spent: row.spent + event.data.cost, last_used_at: event.recordedAt };
  }
  return row;
}

export const scopedKeysProjection = defineProjection<ScopedKeyRow>({
  table: "scoped_keys",
  columns: COLUMNS,
  keyColumns: ["wallet_id", "key_id"],
  keyRow(event) {
    const keyId = keyIdOf(event);
    return keyId === null ? null : { wallet_id: event.walletId, key_id: keyId };
  },
  evolve: evolveScopedKey,
  // A revocation and a key's call change the row the key already has.
  readsPrevious: true,
  liveFilter: `coalesce(least(revoked_at, expires_at), 'infinity') > now() - interval '7 days'`,
  removedWithWallet: true,
});

export interface ScopedKeyKey {
  walletId: string;
  keyId: string;
}

/** One key as a ledger read: checked under the wallet's lock on every call the key makes. */
export const scopedKeyRead = rowRead<ScopedKeyKey, ScopedKeyRow>(scopedKeysProjection, {
  name: "scoped key",
  keyRow: ({ walletId, keyId }) => ({ wallet_id: walletId, key_id: keyId }),
  async load(sql, keys) {
    return await sql<ScopedKeyRow[]>`
      select k.* from jsonb_to_recordset(${sql.json(keys as any)}) as x("walletId" text, "keyId" text)
      join scoped_keys k on k.wallet_id = x."walletId" and k.key_id = x."keyId"`;
  },
});

/** All of a wallet's keys by id, as a ledger read (the list, the count of active keys). */
export const walletKeysRead = walletRowsRead(scopedKeysProjection, {
  name: "wallet keys",
  async load(sql, walletIds) {
    return await sql<ScopedKeyRow[]>`select * from scoped_keys where wallet_id = any(${walletIds})`;
  },
});

/** What a call presenting a key needs before the ledger: whose key it is, and whether it is revoked. */
export interface KeyHolder {
  walletId: string;
  keyId: string;
  expiresAt: Date | null;
  revoked: boolean;
}

/** The key with this hash, in any wallet of an active wallet; undefined when there is none. */
export async function findKeyByHash(sql: Queryable, hash: string): Promise<KeyHolder | undefined> {
  const [row] = await sql<{ wallet_id: string; key_id: string; expires_at: Date | null; revoked: boolean }[]>`
    select k.wallet_id, k.key_id, k.expires_at, k.revoked_at is not null as revoked
    from scoped_keys k join wallets w on w.wallet_id = k.wallet_id
    where k.key_hash = ${hash} and w.deactivated_at is null`;
  return row &&
    { walletId: row.wallet_id, keyId: row.key_id, expiresAt: row.expires_at, revoked: row.revoked };
}

/** Removes keys revoked or expired more than a week ago; they already answer 401. */
export async function sweepRetiredKeys(sql: Queryable, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - RETIRED_KEY_KEPT_MS);
  const rows = await sql`
    delete from scoped_keys where coalesce(least(revoked_at, expires_at), 'infinity') <= ${cutoff} returning 1`;
  return rows.length;
}
