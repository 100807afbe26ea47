// Every wallet's data key: 32 random bytes made the first time the wallet's events are sealed,
// stored wrapped by the master key in wallet_keys, kept unwrapped in a bounded in-memory cache.
// An erased wallet's row has no key: its sealed fields read as erased, and no new key is made.
import type { Queryable, Sql } from "../db/connect.ts";
import { openBytes, sealBytes } from "./aes_gcm.ts";
import { FieldCipher } from "./field_cipher.ts";
import { type MasterKey, MasterKeyError } from "./master_key.ts";

/** A wallet's key; null: erased; absent from a result: the wallet has none (and none was made). */
export type DataKey = FieldCipher | null;

export const DEFAULT_KEY_CACHE = 10_000;

interface KeyRow {
  wallet_id: string;
  wrapped_key: string | null;
  master_key_id: string | null;
}

/** The additional data of a wrapped key: a wrapped key moved to another wallet does not open. */
export function wrapContext(walletId: string): string {
  return `data key:${walletId}`;
}

export async function wrapDataKey(master: MasterKey, walletId: string, raw: Uint8Array): Promise<string> {
  return await sealBytes(master.key, raw, wrapContext(walletId));
}

export async function unwrapDataKey(master: MasterKey, row: KeyRow): Promise<Uint8Array> {
  if (row.master_key_id !== master.id) {
    throw new MasterKeyError(
      `The data key of wallet "${row.wallet_id}" is wrapped by master key "${row.master_key_id}", ` +
        `not "${master.id}" (finish the rotation with deno task rotate-master-key, or start with that key)`,
    );
  }
  try {
    return await openBytes(master.key, row.wrapped_key!, wrapContext(row.wallet_id));
  } catch {
    throw new MasterKeyError(
      `The master key "${master.id}" cannot unwrap the data key of "${row.wallet_id}"`,
    );
  }
}

export class DataKeys {
  readonly #cache = new Map<string, DataKey>();

  constructor(readonly sql: Sql, readonly master: MasterKey, readonly capacity = DEFAULT_KEY_CACHE) {}

  /**
   * The keys of these wallets. `create`: a wallet without a row gets a new key (the writers);
   * without it (the readers) such a wallet is left out of the result.
   */
  async keysFor(walletIds: Iterable<string>, options: { create: boolean }): Promise<Map<string, DataKey>> {
    const found = new Map<string, DataKey>();
    const missing: string[] = [];
    for (const id of new Set(walletIds)) {
      const key = this.#cache.get(id);
      if (key === undefined) missing.push(id);
      else {
        // Most recently used last: the first entry is the one evicted.
        this.#cache.delete(id);
        this.#cache.set(id, key);
        found.set(id, key);
      }
    }
    if (missing.length === 0) return found;
    if (options.create) await this.#create(missing);
    const rows = await this.sql<KeyRow[]>`
      select wallet_id, wrapped_key, master_key_id from wallet_keys where wallet_id = any(${missing})`;
    await Promise.all(rows.map(async (row) => {
      const key = row.wrapped_key === null ? null : new FieldCipher(await unwrapDataKey(this.master, row));
      this.#remember(row.wallet_id, key);
      found.set(row.wallet_id, key);
    }));
    return found;
  }

  /** Drops a wallet's key from this instance's cache (after its erasure committed). */
  forget(walletId: string): void {
    this.#cache.delete(walletId);
  }

  #remember(walletId: string, key: DataKey): void {
    this.#cache.set(walletId, key);
    if (this.#cache.size > this.capacity) this.#cache.delete(this.#cache.keys().next().value!);
  }

  async #create(walletIds: string[]): Promise<void> {
    const wrapped = await Promise.all(
      walletIds.map((id) => wrapDataKey(this.master, id, crypto.getRandomValues(new Uint8Array(32)))),
    );
    // Racing writers of a new wallet both insert; the first row stands and both read it back.
    await this.sql`
      insert into wallet_keys (wallet_id, wrapped_key, master_key_id)
      select w, k, ${this.master.id} from unnest(${walletIds}::text[], ${wrapped}::text[]) as x(w, k)
      on conflict (wallet_id) do nothing`;
  }
}

/** Destroys a wallet's data key for good, in the erasing transaction (a row is kept, keyless). */
export async function destroyDataKey(tx: Queryable, walletId: string, now: Date): Promise<void> {
  await tx`
    insert into wallet_keys (wallet_id, wrapped_key, master_key_id, erased_at)
    values (${walletId}, null, null, ${now})
    on conflict (wallet_id) do update set wrapped_key = null, master_key_id = null, erased_at = excluded.erased_at`;
}
