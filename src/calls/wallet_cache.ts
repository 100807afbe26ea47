// Remembers which token hashes belong to active wallets, and which wallet and key a scoped key's
// hash names, so the hot path skips a query per call. Bounded in size and age. It is only a
// shortcut: the ledger checks the wallet and the key again under the wallet's row lock, and a call
// that finds either gone evicts it here. So the age is long: every entry the cache forgets costs a
// busy wallet's next call a query of its own, outside the batch (at 60 s, the bench's 10,000
// wallets cost about 170 such queries a second).
import type { KeyHolder } from "../../projections/scoped_keys.ts";

/** How long an entry is trusted: the ledger's check under the lock is what keeps calls correct. */
const CACHE_AGE_MS = 15 * 60_000;

/** A bounded map whose entries are forgotten `maxAgeMs` after they were remembered. */
export class RecentCache<V> {
  #entries = new Map<string, { value: V; at: number }>();

  constructor(readonly maxEntries = 50_000, readonly maxAgeMs = CACHE_AGE_MS) {}

  get(id: string, now = Date.now()): V | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    if (now - entry.at > this.maxAgeMs) {
      this.#entries.delete(id);
      return undefined;
    }
    return entry.value;
  }

  remember(id: string, value: V, now = Date.now()) {
    this.#entries.delete(id);
    this.#entries.set(id, { value, at: now });
    // Map keeps insertion order: the first key is the oldest entry.
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }

  evict(id: string) {
    this.#entries.delete(id);
  }

  get size(): number {
    return this.#entries.size;
  }
}

export class ActiveWalletCache {
  readonly #cache: RecentCache<true>;

  constructor(maxEntries = 50_000, maxAgeMs = CACHE_AGE_MS) {
    this.#cache = new RecentCache(maxEntries, maxAgeMs);
  }

  has(walletId: string, now = Date.now()): boolean {
    return this.#cache.get(walletId, now) !== undefined;
  }

  remember(walletId: string, now = Date.now()) {
    this.#cache.remember(walletId, true, now);
  }

  evict(walletId: string) {
    this.#cache.evict(walletId);
  }

  get size(): number {
    return this.#cache.size;
  }
}

export const activeWallets = new ActiveWalletCache();

/** Scoped keys by hash: whose key, and its expiry; never whether it is revoked (the ledger says). */
export const knownKeys = new RecentCache<KeyHolder>();
