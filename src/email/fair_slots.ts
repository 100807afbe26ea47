// A fixed number of slots shared fairly between senders: each sender holds at most its share at once,
// its other requests wait in its own queue, and a freed slot goes to the next sender in turn that is
// under its share. One sender's slow work therefore waits behind its own and never takes every slot.
// Bounded: waiting requests in all and per sender.

export interface SlotLimits {
  slots: number;
  /** Slots one sender may hold at once. */
  perSender: number;
  /** Requests waiting in all, and per sender; past either the request is turned away. */
  maxWaiting: number;
  maxWaitingPerSender: number;
}

/** Given back once the work is done; a second call does nothing. */
export type Release = () => void;

export type Acquired = { ok: true; release: Release } | { ok: false; waiting: number };

export class FairSlots {
  readonly #limits: SlotLimits;
  readonly #held = new Map<string, number>();
  /** Waiting requests by sender; the map's order is the turn order. */
  readonly #queues = new Map<string, (() => void)[]>();
  #active = 0;
  #waiting = 0;

  constructor(limits: SlotLimits) {
    this.#limits = limits;
  }

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiting;
  }

  /** A slot for `sender` now, or once its turn comes; `ok: false` when too many already wait. */
  acquire(sender: string): Promise<Acquired> {
    if (this.#active < this.#limits.slots && this.#heldBy(sender) < this.#limits.perSender) {
      return Promise.resolve({ ok: true, release: this.#take(sender) });
    }
    const queue = this.#queues.get(sender) ?? [];
    if (this.#waiting >= this.#limits.maxWaiting || queue.length >= this.#limits.maxWaitingPerSender) {
      return Promise.resolve({ ok: false, waiting: this.#waiting });
    }
    if (queue.length === 0) this.#queues.set(sender, queue);
    this.#waiting++;
    return new Promise((resolve) => queue.push(() => resolve({ ok: true, release: this.#take(sender) })));
  }

  #heldBy(sender: string): number {
    return this.#held.get(sender) ?? 0;
  }

  #take(sender: string): Release {
    this.#active++;
    this.#held.set(sender, this.#heldBy(sender) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
      const held = this.#heldBy(sender) - 1;
      if (held > 0) this.#held.set(sender, held);
      else this.#held.delete(sender);
      this.#dispatch();
    };
  }

  /** Hands free slots to waiting senders in turn, skipping those at their share. */
  #dispatch(): void {
    while (this.#active < this.#limits.slots) {
      const next = [...this.#queues.keys()].find((sender) => this.#heldBy(sender) < this.#limits.perSender);
      if (next === undefined) return;
      const queue = this.#queues.get(next)!;
      const start = queue.shift()!;
      this.#waiting--;
      // The sender served goes to the back of the turn order.
      this.#queues.delete(next);
      if (queue.length > 0) this.#queues.set(next, queue);
      start();
    }
  }
}
