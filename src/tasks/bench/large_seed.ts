// Seeds a large database by COPY from this process, streaming the rows the service's own folds
// would hold: per wallet its opening, welcome grant and one purchase, KV writes as billed calls,
// billed reads, and the wallet, KV, call-log, usage and payment rows those events fold into.
import type { Sql } from "../../db/connect.ts";
import { sha256Hex } from "../../ids.ts";
import { preparePartitions } from "../../sweeper.ts";
import { LOG_RETENTION_MS } from "../../../projections/call_logs.ts";
import { BENCH_KEY_PATH, POST_VALUE_BYTES } from "./load.ts";

export interface LargeScale {
  wallets: number;
  kvEntries: number;
  events: number;
}

const DAY_MS = 24 * 3600 * 1000;
const WELCOME = 100;
const PURCHASE = 1_000_000;
/** What the service gives a written key when the call names no TTL. */
const KV_TTL_MS = 30 * DAY_MS;
/** Each wallet is active on 4 days a week apart within the last 4 weeks: one of them in the last 7. */
const ACTIVE_DAYS = 4;
const HISTORY_DAYS = 28;
/** Bytes gathered per COPY stream before a write: few large writes, bounded memory. */
const CHUNK_BYTES = 1 << 20;
const VALUE = "v".repeat(POST_VALUE_BYTES);
const [, , BENCH_BUCKET, BENCH_KEY] = BENCH_KEY_PATH.split("/");

/**
 * The token of seeded wallet `index`: 32 characters of the service's alphabet, so that the
 * service's own hashing finds the wallet. Deterministic, so the load can name them afterwards.
 */
export function seededToken(index: number): string {
  return `lg${index.toString(36).padStart(30, "0")}`;
}

/** Share `index` of `total` split over `parts`: the remainder goes to the first ones. */
function share(total: number, parts: number, index: number): number {
  return Math.floor(total / parts) + (index < total % parts ? 1 : 0);
}

/** Checks that every wallet can hold its events: 3 of its own, 2 per KV write, the rest reads. */
export function checkScale(scale: LargeScale): void {
  const { wallets, kvEntries, events } = scale;
  if (kvEntries < wallets) {
    throw new Error(
      `Invalid BENCH_LARGE_KV "${kvEntries}": must be at least BENCH_LARGE_WALLETS (${wallets})`,
    );
  }
  const needed = 3 * wallets + 2 * kvEntries;
  if (events < needed) {
    throw new Error(
      `Invalid BENCH_LARGE_EVENTS "${events}": must be at least 3 per wallet and 2 per KV entry (${needed})`,
    );
  }
}

/** A COPY FROM STDIN in text format, fed in chunks; waits for the server when its buffer is full. */
class CopyStream {
  #parts: string[] = [];
  #size = 0;
  #stream: any;
  #finished!: Promise<void>;
  rows = 0;

  async open(sql: Sql, table: string, columns: string[]) {
    this.#stream = await sql.unsafe(`copy ${table} (${columns.join(", ")}) from stdin`).writable();
    this.#finished = new Promise((resolve, reject) => {
      this.#stream.on("finish", resolve);
      this.#stream.on("error", reject);
    });
    this.#finished.catch(() => {});
    return this;
  }

  /** One row; values hold no tab, newline or backslash, and null is written as \N. */
  async row(values: (string | number | null)[]) {
    const line = values.map((v) => v === null ? "\\N" : String(v)).join("\t") + "\n";
    this.#parts.push(line);
    this.#size += line.length;
    this.rows++;
    if (this.#size >= CHUNK_BYTES) await this.#flush();
  }

  async #flush() {
    const chunk = this.#parts.join("");
    this.#parts = [];
    this.#size = 0;
    if (this.#stream.write(chunk)) return;
    await Promise.race([new Promise((resolve) => this.#stream.once("drain", resolve)), this.#finished]);
  }

  async close() {
    await this.#flush();
    this.#stream.end();
    await this.#finished;
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
const utcDay = (ms: number) => iso(ms).slice(0, 10);

/**
 * Seeds the service's tables (migrated, empty) with `scale`, as of `now`: rows in wallet-id order,
 * so every primary key grows at its right edge. Calls are at most 4 weeks old; call-log entries
 * exist for the last 7 days, as the log keeps them. Returns the rows written per table.
 */
export async function seedLargeDatabase(
  sql: Sql,
  scale: LargeScale,
  options: { now: Date; progress?: (wallets: number) => void },
): Promise<Record<string, number>> {
  checkScale(scale);
  const now = options.now.getTime();
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  // Call-log entries go straight into their dated partitions: none lands in the catch-all, which
  // the service's start-up would otherwise empty into new partitions in one transaction.
  await preparePartitions(sql, new Date(now));
  const order = Array.from({ length: scale.wallets }, (_, i) => ({ i, id: sha256Hex(seededToken(i)) }));
  order.sort((a, b) => a.id < b.id ? -1 : 1);

  const streams = {
    events: await new CopyStream().open(sql, "events", [
      "wallet_id",
      "version",
      "type",
      "data",
      "recorded_at",
    ]),
    wallets: await new CopyStream().open(sql, "wallets", [
      "wallet_id",
      "balance",
      "version",
      "created_at",
      "last_used_at",
    ]),
    kv_entries: await new CopyStream().open(sql, "kv_entries", [
      "wallet_id",
      "bucket",
      "key",
      "value",
      "expires_at",
      "version",
    ]),
    call_logs: await new CopyStream().open(sql, "call_logs", [
      "wallet_id",
      "id",
      "version",
      "method",
      "path",
      "endpoint",
      "status_code",
      "cost",
      "balance",
      "response_time_ms",
      "at",
      "expires_at",
    ]),
    daily_usage: await new CopyStream().open(sql, "daily_usage", [
      "wallet_id",
      "day",
      "type",
      "calls",
      "credits",
      "errors",
    ]),
    payments: await new CopyStream().open(sql, "payments", [
      "wallet_id",
      "payment_id",
      "tier",
      "amount",
      "paid_at",
    ]),
  };

  let done = 0;
  for (const { i, id } of order) {
    const kv = share(scale.kvEntries, scale.wallets, i);
    const events = share(scale.events, scale.wallets, i);
    const calls = events - 3 - kv;
    // Days back of the wallet's active days, oldest first; its calls fall on them in turn.
    const days = Array.from({ length: ACTIVE_DAYS }, (_, k) => 1 + ((i + 7 * k) % HISTORY_DAYS))
      .sort((a, b) => b - a);
    const offset = (i * 7919) % (DAY_MS / 2);
    const opened = today - days[0] * DAY_MS + offset;
    const callAt = (c: number) =>
      today - days[Math.floor((c * ACTIVE_DAYS) / calls)] * DAY_MS + offset + (c + 1) * 1000;

    const paymentId = `evt_large_${i}`;
    await streams.events.row([id, 1, "WalletOpened", "{}", iso(opened)]);
    await streams.events.row([
      id,
      2,
      "CreditsGranted",
      `{"amount":${WELCOME},"balance":${WELCOME},"reason":"welcome"}`,
      iso(opened),
    ]);
    let balance = WELCOME + PURCHASE;
    await streams.events.row([
      id,
      3,
      "CreditsPurchased",
      `{"amount":${PURCHASE},"balance":${balance},"tier":"1","paymentId":"${paymentId}"}`,
      iso(opened),
    ]);
    await streams.payments.row([id, paymentId, "1", PURCHASE, iso(opened)]);
    await streams.daily_usage.row([id, utcDay(opened), "payment", 1, 0, 0]);

    let version = 3;
    const usage = new Map<string, number>();
    let lastAt = opened;
    for (let c = 0; c < calls; c++) {
      const at = callAt(c);
      lastAt = at;
      // The first `kv` calls write the wallet's keys (the first is the key the load reads), the
      // rest read them in turn.
      const k = c < kv ? c : (c - kv) % kv;
      const [bucket, key] = k === 0 ? [BENCH_BUCKET, BENCH_KEY] : [`b${k % 3}`, `k${k}`];
      const method = c < kv ? "POST" : "GET";
      const path = `/kv/${bucket}/${key}`;
      const callId = `L${i.toString(36)}v${version + 1}`;
      balance -= 1;
      version += 1;
      await streams.events.row([
        id,
        version,
        "CallBilled",
        `{"callId":"${callId}","method":"${method}","path":"${path}","endpoint":"kv","status":200,"cost":1,"balance":${balance},"ms":1}`,
        iso(at),
      ]);
      if (at + LOG_RETENTION_MS > now) {
        await streams.call_logs.row([
          id,
          callId,
          version,
          method,
          path,
          "kv",
          200,
          1,
          balance,
          1,
          iso(at),
          iso(at + LOG_RETENTION_MS),
        ]);
      }
      const day = utcDay(at);
      usage.set(day, (usage.get(day) ?? 0) + 1);
      if (method === "POST") {
        version += 1;
        const expiresAt = iso(at + KV_TTL_MS);
        await streams.events.row([
          id,
          version,
          "KvWritten",
          `{"bucket":"${bucket}","key":"${key}","value":"${VALUE}","expiresAt":"${expiresAt}"}`,
          iso(at),
        ]);
        await streams.kv_entries.row([id, bucket, key, VALUE, expiresAt, version]);
      }
    }
    for (const [day, n] of usage) await streams.daily_usage.row([id, day, "kv", n, n, 0]);
    await streams.wallets.row([id, balance, version, iso(opened), iso(lastAt)]);
    if (++done % 10_000 === 0) options.progress?.(done);
  }
  const rows: Record<string, number> = {};
  for (const [table, stream] of Object.entries(streams)) {
    await stream.close();
    rows[table] = stream.rows;
  }
  return rows;
}
