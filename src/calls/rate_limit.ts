// A rate limit per key kept in this process's memory, for what is free and writes nothing: `perWindow`
// calls at once, then one every `windowMs / perWindow` (GCRA: one number per key, the time the
// key's next call is due). Bounded: past `maxKeys` keys busy at once, new keys share one budget.

export interface RateLimitOptions {
  /** Calls a key may make at once, and in each window on average. */
  perWindow: number;
  windowMs: number;
  /** Most keys remembered; a key whose budget is whole again is forgotten first. */
  maxKeys: number;
}

/** The key of the budget that keys beyond `maxKeys` share while every remembered key is busy. */
const OVERFLOW = "\0overflow";

export class KeyedRateLimit {
  /** Per key, when its budget is whole again; in order of last use, so the least recent is first. */
  readonly #due = new Map<string, number>();
  readonly #intervalMs: number;
  /** How far ahead of now a key's due time may run: the burst. */
  readonly #toleranceMs: number;

  constructor(readonly options: RateLimitOptions) {
    this.#intervalMs = options.windowMs / options.perWindow;
    this.#toleranceMs = options.windowMs;
  }

  /** Counts a call of `key` and answers 0, or answers how many ms until it fits, counting nothing. */
  take(key: string, now = performance.now()): number {
    const slot = this.#slotOf(key, now);
    const due = Math.max(this.#due.get(slot) ?? now, now) + this.#intervalMs;
    const waitMs = due - this.#toleranceMs - now;
    if (waitMs > 0) return waitMs;
    this.#due.delete(slot);
    this.#due.set(slot, due);
    return 0;
  }

  /** Gives back one call `take` counted for `key` (it turned out not to cost what the limit guards). */
  giveBack(key: string, now = performance.now()) {
    const slot = this.#due.has(key) ? key : OVERFLOW;
    const due = this.#due.get(slot);
    if (due !== undefined) this.#due.set(slot, Math.max(now, due - this.#intervalMs));
  }

  /** Keys remembered now (bounded by maxKeys, plus the shared one). */
  get size(): number {
    return this.#due.size;
  }

  /**
   * The key itself, unless the map is full: then keys whose budget is whole again leave (nothing is
   * lost: a whole budget is what an unknown key gets), and if the least recently used key is still
   * busy, every key used within the window is, and a new key shares the overflow budget.
   */
  #slotOf(key: string, now: number): string {
    if (this.#due.has(key)) return key;
    while (this.#due.size >= this.options.maxKeys) {
      const [oldest, due] = this.#due.entries().next().value!;
      if (due > now) return OVERFLOW;
      this.#due.delete(oldest);
    }
    return key;
  }
}

/** Whole seconds for Retry-After: at least 1. */
export function retryAfterSeconds(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}
