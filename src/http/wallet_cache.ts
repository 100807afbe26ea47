// Remembers which token hashes belong to active wallets, so the hot path skips a query per call.
// Bounded in size and age. It is only a shortcut: the ledger checks the wallet again under its
// row lock, and a call that finds it gone evicts it here.
export class ActiveWalletCache {
  #entries = new Map<string, number>();

  constructor(readonly maxEntries = 50_000, readonly maxAgeMs = 60_000) {}

  has(walletId: string, now = Date.now()): boolean {
    const at = this.#entries.get(walletId);
    if (at === undefined) return false;
    if (now - at > this.maxAgeMs) {
      this.#entries.delete(walletId);
      return false;
    }
    return true;
  }

  remember(walletId: string, now = Date.now()) {
    this.#entries.delete(walletId);
    this.#entries.set(walletId, now);
    // Map keeps insertion order: the first key is the oldest entry.
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }

  evict(walletId: string) {
    this.#entries.delete(walletId);
  }

  get size(): number {
    return this.#entries.size;
  }
}

export const activeWallets = new ActiveWalletCache();
