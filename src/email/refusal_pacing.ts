// Slows a sender whose messages keep being refused (parse bombs, unreadable mail): each refusal fills
// the sender's bucket by 1 plus the seconds its parse took, the bucket drains at a steady rate, and a
// sender whose bucket is full gets a temporary 451 4.7.1 at MAIL FROM and at the end of DATA instead
// of a parse. Kept in memory per instance, for a bounded number of senders (the oldest forgotten).

export interface PacingLimits {
  /** Refusals (in bucket units) a sender may have at once before it is slowed. */
  burst: number;
  /** Units drained per second. */
  drainPerSecond: number;
  /** Senders remembered; past it the least recently refused is forgotten. */
  maxSenders: number;
}

export const REFUSAL_PACING: PacingLimits = {
  // Ten quick refusals, then one every six seconds; one timed-out parse (10 s) fills it at once.
  burst: 10,
  drainPerSecond: 1 / 6,
  maxSenders: 10_000,
};

interface Bucket {
  level: number;
  /** performance.now() of the level. */
  at: number;
}

export class RefusalPacing {
  readonly #limits: PacingLimits;
  readonly #buckets = new Map<string, Bucket>();

  constructor(limits: PacingLimits = REFUSAL_PACING) {
    this.#limits = limits;
  }

  /** A message of `sender` was refused after `parseMs` of work. */
  refused(sender: string, parseMs: number, now = performance.now()): void {
    const level = this.#level(sender, now) + 1 + Math.max(0, parseMs) / 1000;
    // Re-inserted, so the map's first entry is always the least recently refused.
    this.#buckets.delete(sender);
    this.#buckets.set(sender, { level, at: now });
    if (this.#buckets.size > this.#limits.maxSenders) {
      this.#buckets.delete(this.#buckets.keys().next().value!);
    }
  }

  /** Whether `sender` must wait before its next message is read. */
  slowed(sender: string, now = performance.now()): boolean {
    return this.#level(sender, now) >= this.#limits.burst;
  }

  #level(sender: string, now: number): number {
    const bucket = this.#buckets.get(sender);
    if (!bucket) return 0;
    const level = bucket.level - ((now - bucket.at) / 1000) * this.#limits.drainPerSecond;
    if (level > 0) return level;
    this.#buckets.delete(sender);
    return 0;
  }
}
