// The simulation's model of the service: the rules of the CONTRACT written again, plainly and in
// memory, with no code of the service. Each method answers what a call must get and changes the
// model as the call must change the service; the driver compares the two after every call.
export const KV_PRICE = 1;
export const RUN_PRICE = 2;
const DAY = 24 * 3600 * 1000;
const EVERY_5_MINUTES = 5 * 60 * 1000;
const GRACE_MS = 5 * 60 * 1000;

/** What a billed HTTP call must answer: its status, cost and balance after (401: neither). */
export interface Billed {
  status: number;
  cost?: number;
  balance?: number;
  body?: string;
}

export interface ModelWebhook {
  email?: string;
  includeAttachments: boolean;
  /** Scheduled every 5 minutes in UTC: the next planned run. */
  nextRun?: number;
  /** A mailbox webhook paused by its owner: its mail waits. */
  paused?: boolean;
  /** Emails queued to it (none is sent: no delivery worker runs in the simulation). */
  waiting?: number;
}

export class ModelWallet {
  balance = 100;
  deactivated = false;
  readonly kv = new Map<string, { value: string; expiresAt: number }>();
  readonly webhooks = new Map<string, ModelWebhook>();
  readonly payments = new Set<string>();
  /** Accepted mail by mailbox and Message-ID, with the time: repeats within 24 h are free. */
  readonly accepted = new Map<string, number>();
  /** Outbox rows: accepted emails and fired runs (no delivery worker runs in the simulation). */
  queued = 0;

  constructor(readonly token: string, readonly hash: string) {}

  /** A call of `price`: 401 when deactivated, 402 below the price, else charged whatever its outcome. */
  bill(price: number, outcome: (charged: boolean) => { status: number; body?: string }): Billed {
    if (this.deactivated) return { status: 401 };
    if (this.balance < price) return { status: 402, cost: 0, balance: this.balance };
    this.balance -= price;
    return { ...outcome(true), cost: price, balance: this.balance };
  }

  liveValue(key: string, now: number): string | undefined {
    const entry = this.kv.get(key);
    return entry && entry.expiresAt > now ? entry.value : undefined;
  }

  kvWrite(key: string, value: string, ttlSeconds: number, now: number, invalid: boolean): Billed {
    return this.bill(KV_PRICE, () => {
      if (invalid) return { status: 400 };
      const seconds = ttlSeconds === 0 ? 2_592_000 : ttlSeconds;
      this.kv.set(key, { value, expiresAt: now + seconds * 1000 });
      return { status: 200, body: "OK" };
    });
  }

  kvRead(key: string, now: number): Billed {
    return this.bill(KV_PRICE, () => {
      const value = this.liveValue(key, now);
      return value === undefined ? { status: 404, body: "Key Not Found" } : { status: 200, body: value };
    });
  }

  kvDelete(key: string, now: number): Billed {
    return this.bill(KV_PRICE, () => {
      if (this.liveValue(key, now) === undefined) return { status: 404, body: "Key Not Found" };
      this.kv.delete(key);
      return { status: 200, body: "OK" };
    });
  }

  createWebhook(id: string, webhook: ModelWebhook): Billed {
    return this.bill(1, () => {
      if (this.webhooks.has(id)) return { status: 409 };
      this.webhooks.set(id, webhook);
      return { status: 200 };
    });
  }

  deleteWebhook(id: string): Billed {
    return this.bill(1, () => this.webhooks.delete(id) ? { status: 200, body: "OK" } : { status: 404 });
  }

  /** PATCH {active}: pauses or resumes a mailbox webhook; a scheduled one refuses it. */
  setActive(id: string, active: boolean): Billed {
    return this.bill(1, () => {
      const webhook = this.webhooks.get(id);
      if (!webhook) return { status: 404 };
      if (webhook.nextRun !== undefined) return { status: 400 };
      webhook.paused = !active;
      return { status: 200 };
    });
  }

  /** Emails waiting for their paused webhook to resume (held outbox rows). */
  held(): number {
    return [...this.webhooks.values()].reduce((n, w) => n + (w.paused ? w.waiting ?? 0 : 0), 0);
  }

  /** A confirmed payment of tier 1: credited once per event id; always answered 200. */
  pay(eventId: string): number {
    if (this.deactivated) return 400;
    if (!this.payments.has(eventId)) {
      this.payments.add(eventId);
      this.balance += 1_000_000;
    }
    return 200;
  }

  /** The SMTP reply code of a mail to one of the wallet's mailboxes. */
  receiveMail(webhookId: string, messageId: string, withFile: boolean, now: number): number {
    const webhook = this.webhooks.get(webhookId);
    if (this.deactivated || !webhook || webhook.nextRun !== undefined) return 550;
    const key = `${webhookId}\n${messageId}`;
    const before = this.accepted.get(key);
    if (before !== undefined && now - before < DAY) return 250;
    const cost = webhook.includeAttachments && withFile ? 5 : 2;
    if (this.balance < cost) return 452;
    this.balance -= cost;
    this.accepted.set(key, now);
    this.queued++;
    webhook.waiting = (webhook.waiting ?? 0) + 1;
    return 250;
  }

  /** One scheduler pass at `now`: missed runs skipped, due runs fired or refused. */
  runSchedules(now: number): void {
    if (this.deactivated) return;
    for (const webhook of this.webhooks.values()) {
      while (webhook.nextRun !== undefined && webhook.nextRun <= now) {
        if (now - webhook.nextRun > GRACE_MS) {
          webhook.nextRun = gridAtOrAfter(now - GRACE_MS);
          continue;
        }
        if (this.balance >= RUN_PRICE) {
          this.balance -= RUN_PRICE;
          this.queued++;
        }
        webhook.nextRun += EVERY_5_MINUTES;
      }
    }
  }
}

/** The first planned time of `*\/5 * * * *` in UTC strictly after `t`. */
export function gridAfter(t: number): number {
  return Math.floor(t / EVERY_5_MINUTES) * EVERY_5_MINUTES + EVERY_5_MINUTES;
}

function gridAtOrAfter(t: number): number {
  return Math.ceil(t / EVERY_5_MINUTES) * EVERY_5_MINUTES;
}

/** A seeded random source (mulberry32): the same seed gives the same run. */
export function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)],
    chance: (p: number) => next() < p,
  };
}
