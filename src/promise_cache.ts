// A promise kept per key: what is loaded once (a setting from the database, a file of the release)
// is shared by every caller, and forgotten when it fails, so the next caller tries again rather than
// meeting the same failure for the life of the process.

/** A Map or a WeakMap of promises. */
export interface PromiseCache<K, V> {
  get(key: K): Promise<V> | undefined;
  set(key: K, value: Promise<V>): unknown;
  delete(key: K): boolean;
}

/** The promise kept for `key`, or `load()`'s, kept until it rejects. */
export function cachedPromise<K, V>(cache: PromiseCache<K, V>, key: K, load: () => Promise<V>): Promise<V> {
  let found = cache.get(key);
  if (!found) {
    found = load();
    cache.set(key, found);
    found.catch(() => cache.delete(key));
  }
  return found;
}
