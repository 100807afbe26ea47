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

/** A scoped key: its rules, what it spent, whether it is revoked. */
export interface ModelKey {
  id: string;
  token: string;
  scope: "read" | "write";
  buckets?: string[];
  cap?: number;
  spent: number;
  revoked: boolean;
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

/** A KV entry; `etag` is the ETag the service answered for this version, once a read saw it. */
export interface ModelEntry {
  value: string;
  expiresAt: number;
  etag?: string;
}

/** Conditional-request headers as sent: one ETag or `*`. */
export interface KvConditions {
  ifMatch?: string;
  ifNoneMatch?: string;
}

/** What a listing page must hold: its keys, and whether keys remain after them. */
export interface ModelPage {
  keys: { key: string; expiresAt: string; size: number }[];
  more: boolean;
}

const MAX_COUNTER = Number.MAX_SAFE_INTEGER;
const DEFAULT_TTL_MS = 2_592_000_000;

/** Code-point order: what the CONTRACT calls key order. */
export function keyOrder(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

export class ModelWallet {
  balance = 100;
  deactivated = false;
  /** Entries by "bucket/key". */
  readonly kv = new Map<string, ModelEntry>();
  /** Every ETag a read answered, by "bucket/key": a new version's ETag is never one of them. */
  readonly etagsSeen = new Map<string, Set<string>>();
  readonly webhooks = new Map<string, ModelWebhook>();
  readonly payments = new Set<string>();
  readonly keys: ModelKey[] = [];
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

  live(key: string, now: number): ModelEntry | undefined {
    const entry = this.kv.get(key);
    return entry && entry.expiresAt > now ? entry : undefined;
  }

  liveValue(key: string, now: number): string | undefined {
    return this.live(key, now)?.value;
  }

  /** If-Match holds on a live entry whose ETag is the one sent (or `*`); If-None-Match: * on none. */
  preconditionFails(key: string, conditions: KvConditions, now: number): boolean {
    const entry = this.live(key, now);
    if (
      conditions.ifMatch !== undefined &&
      (!entry || (conditions.ifMatch !== "*" && conditions.ifMatch !== entry.etag))
    ) {
      return true;
    }
    return conditions.ifNoneMatch === "*" && entry !== undefined;
  }

  kvWrite(
    key: string,
    value: string,
    ttlSeconds: number,
    now: number,
    invalid: boolean,
    conditions: KvConditions = {},
  ): Billed {
    return this.bill(KV_PRICE, () => {
      if (invalid) return { status: 400 };
      if (this.preconditionFails(key, conditions, now)) return { status: 412 };
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

  /** Takes the ETag a read answered: the known one again, or a fresh one after a write. */
  observeEtag(key: string, etag: string | null): string | undefined {
    const entry = this.kv.get(key)!;
    const seen = this.etagsSeen.get(key) ?? new Set();
    this.etagsSeen.set(key, seen);
    if (etag === null) return "no ETag";
    if (entry.etag !== undefined) return etag === entry.etag ? undefined : `ETag ${etag}, not ${entry.etag}`;
    if (seen.has(etag)) return `ETag ${etag} came back after a write`;
    entry.etag = etag;
    seen.add(etag);
    return undefined;
  }

  kvDelete(key: string, now: number, conditions: KvConditions = {}): Billed {
    return this.bill(KV_PRICE, () => {
      if (this.preconditionFails(key, conditions, now)) return { status: 412 };
      if (this.liveValue(key, now) === undefined) return { status: 404, body: "Key Not Found" };
      this.kv.delete(key);
      return { status: 200, body: "OK" };
    });
  }

  /**
   * A key-value call made with a scoped key: 401 once revoked (no billing headers), 402 below the
   * price or past the key's cap (charged nothing), 403 outside its scope or buckets (charged),
   * else the call, charged to the wallet and counted in the key's spend.
   */
  keyCall(key: ModelKey, need: "read" | "write", bucket: string, call: () => Billed): Billed {
    if (this.deactivated || key.revoked) return { status: 401 };
    if (this.balance < KV_PRICE) return { status: 402, cost: 0, balance: this.balance };
    if (key.cap !== undefined && key.spent + KV_PRICE > key.cap) {
      return { status: 402, cost: 0, balance: this.balance, body: "Spend cap reached" };
    }
    const forbidden = (need === "write" && key.scope === "read") ||
      (key.buckets !== undefined && !key.buckets.includes(bucket));
    key.spent += KV_PRICE;
    if (forbidden) return this.bill(KV_PRICE, () => ({ status: 403 }));
    return call();
  }

  /** A missing key counts as 0 and gets the ttl; an existing one keeps its expiry. */
  kvIncr(key: string, by: number, ttlSeconds: number, now: number): Billed {
    return this.bill(KV_PRICE, () => {
      const entry = this.live(key, now);
      const text = entry?.value ?? "0";
      const current = /^-?\d{1,16}$/.test(text) ? Number(text) : NaN;
      const value = current + by;
      if (!Number.isSafeInteger(current) || Math.abs(value) > MAX_COUNTER) return { status: 409 };
      const seconds = ttlSeconds === 0 ? DEFAULT_TTL_MS / 1000 : ttlSeconds;
      this.kv.set(key, { value: String(value + 0), expiresAt: entry?.expiresAt ?? now + seconds * 1000 });
      return { status: 200, body: String(value + 0) };
    });
  }

  /** A page of a bucket's live keys that start with `prefix`, after `after`, in key order. */
  kvList(bucket: string, prefix: string, after: string | undefined, limit: number, now: number) {
    let page: ModelPage | undefined;
    const billed = this.bill(KV_PRICE, () => {
      const keys = [...this.kv.keys()]
        .filter((k) => k.startsWith(`${bucket}/${prefix}`) && this.live(k, now))
        .map((k) => k.slice(bucket.length + 1))
        .filter((k) => after === undefined || keyOrder(k, after) > 0)
        .sort(keyOrder);
      page = {
        keys: keys.slice(0, limit).map((key) => {
          const entry = this.kv.get(`${bucket}/${key}`)!;
          const size = new TextEncoder().encode(entry.value).length;
          return { key, expiresAt: new Date(entry.expiresAt).toISOString(), size };
        }),
        more: keys.length > limit,
      };
      return { status: 200 };
    });
    return { billed, page };
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
