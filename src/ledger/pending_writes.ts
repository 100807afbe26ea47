// What a ledger transaction writes: the staged events (numbered after each wallet's version), the
// wallet rows folded from them, every other read model and the commands' effects. Staging is pure
// and in memory (the rows commands of the same batch read are kept current by BatchReads); the
// tables are written at the end, each model and each effect type in one set-based statement.
import type { Tx } from "../db/connect.ts";
import { appendStaged, stageEvents } from "../../events/store.ts";
import type { NewEvent, StoredEvent } from "../../events/catalogue.ts";
import { type Projection, removesWalletRows, rowId } from "../../projections/projection.ts";
import { loadRows, type RowChanges, writeRows } from "../../projections/projection_sql.ts";
import { INLINE_PROJECTIONS } from "../../projections/mod.ts";
import { evolveWallet, saveWallets, type WalletRow } from "../../projections/wallets.ts";
import type { Effect } from "./command.ts";
import type { BatchReads } from "./reads.ts";
import type { EventSealer } from "../secrets/sealer.ts";
import { recordCreditMovements } from "../metrics/ledger_metrics.ts";

/** How the module that owns a table applies one type of effect. */
export interface EffectApplier<E extends Effect = Effect> {
  /** Applies every effect of its type in a transaction, in the order the commands decided them. */
  apply(tx: Tx, effects: E[], now: Date): Promise<void>;
  /** Told after the transaction committed (wake a worker; never before the rows are visible). */
  afterCommit?(effects: E[]): void;
}

export type EffectAppliers = Record<string, EffectApplier<any>>;

export interface StagingOptions {
  /** Check every event against its schema (tests); typed code built them, so the hot path need not. */
  validate: boolean;
  /** Encrypts the sensitive fields of the events as they are appended (none: stored in clear). */
  sealer?: EventSealer;
}

type Row = Record<string, unknown>;

export class PendingWrites {
  readonly events: StoredEvent[] = [];
  readonly wallets = new Map<string, WalletRow>();
  readonly #effects = new Map<string, Effect[]>();

  constructor(
    readonly appliers: EffectAppliers,
    readonly reads?: BatchReads,
    readonly options: StagingOptions = { validate: true },
  ) {}

  /** Stages a wallet's events after its version; returns the wallet row they leave. */
  stage(
    walletId: string,
    wallet: WalletRow | undefined,
    events: NewEvent[],
    now: Date,
  ): WalletRow | undefined {
    const staged = stageEvents(walletId, {
      afterVersion: wallet?.version ?? 0,
      events,
      recordedAt: now,
      validate: this.options.validate,
    });
    const next = staged.reduce<WalletRow | undefined>(evolveWallet, wallet);
    if (next) this.wallets.set(walletId, next);
    this.events.push(...staged);
    if (this.reads) { for (const event of staged) this.reads.observe(event); }
    return next;
  }

  /** Throws for an effect no module applies, before anything of its command is staged. */
  checkEffects(effects: Effect[] = []): void {
    for (const effect of effects) {
      if (!this.appliers[effect.type]) throw new Error(`No applier for effect "${effect.type}"`);
    }
  }

  addEffects(effects: Effect[] = []): void {
    this.checkEffects(effects);
    for (const effect of effects) {
      const same = this.#effects.get(effect.type);
      if (same) same.push(effect);
      else this.#effects.set(effect.type, [effect]);
    }
  }

  /** Writes everything staged: independent statements, sent together (one round trip). */
  async flush(tx: Tx, now: Date): Promise<void> {
    // The encryption runs while the rows the folds need are read: it adds no round trip.
    const sealing = this.options.sealer?.seal(this.events);
    sealing?.catch(() => {});
    const changes = await Promise.all(INLINE_PROJECTIONS.map((p) => this.#changesOf(tx, p)));
    const stored = await sealing;
    await Promise.all([
      appendStaged(tx, this.events, stored),
      saveWallets(tx, [...this.wallets.values()]),
      ...INLINE_PROJECTIONS.map((projection, i) => writeRows(tx, projection, changes[i])),
      ...[...this.#effects].map(([type, effects]) => this.appliers[type].apply(tx, effects, now)),
    ]);
  }

  /** Tells the appliers that their effects are committed. */
  committed(): void {
    recordCreditMovements(this.events);
    for (const [type, effects] of this.#effects) this.appliers[type].afterCommit?.(effects);
  }

  /** The batch's events folded into one model: the final row of every key they touch. */
  async #changesOf(tx: Tx, projection: Projection<any>): Promise<RowChanges> {
    if (projection.insertOnly) return this.#insertedRows(projection);
    const removedWallets = new Set<string>();
    const touched = new Map<string, { walletId: string; key: Row; events: StoredEvent[] }>();
    for (const event of this.events) {
      if (removesWalletRows(projection, event)) {
        removedWallets.add(event.walletId);
        for (const [id, entry] of touched) if (entry.walletId === event.walletId) touched.delete(id);
        continue;
      }
      const key = projection.keyRow(event);
      if (key === null) continue;
      const id = rowId(projection.keyColumns, key);
      const entry = touched.get(id);
      if (entry) entry.events.push(event);
      else touched.set(id, { walletId: event.walletId, key, events: [event] });
    }
    const previous = await this.#previousRows(tx, projection, touched, removedWallets);
    const deleted: Row[] = [];
    const written: Row[] = [];
    for (const [id, { key, events }] of touched) {
      const before = previous.get(id);
      const row = events.reduce<Row | undefined>((r, e) => projection.evolve(r, e), before);
      if (row) written.push(row);
      // A model that loaded the row knows whether there is one to delete.
      else if (before || !projection.readsPrevious) deleted.push(key);
    }
    return { removedWallets: [...removedWallets], deleted, written };
  }

  /** An insert-only model's rows: one per event, none read back, none of a wallet removed after it. */
  #insertedRows(projection: Projection<any>): RowChanges {
    const removedWallets = new Set<string>();
    let written: Row[] = [];
    for (const event of this.events) {
      if (removesWalletRows(projection, event)) {
        removedWallets.add(event.walletId);
        written = written.filter((row) => row.wallet_id !== event.walletId);
        continue;
      }
      if (projection.keyRow(event) === null) continue;
      const row = projection.evolve(undefined, event);
      if (row) written.push(row);
    }
    return { removedWallets: [...removedWallets], deleted: [], written };
  }

  /** The current rows of the touched keys, for models whose fold needs them (one statement). */
  async #previousRows(
    tx: Tx,
    projection: Projection<any>,
    touched: Map<string, { walletId: string; key: Row }>,
    removedWallets: Set<string>,
  ): Promise<Map<string, Row>> {
    const found = new Map<string, Row>();
    if (!projection.readsPrevious || touched.size === 0) return found;
    const keys = [...touched.values()].filter((e) => !removedWallets.has(e.walletId)).map((e) => e.key);
    for (const row of await loadRows(tx, projection, keys)) {
      const id = rowId(projection.keyColumns, row);
      // A row under an id no event gave would be folded from nothing and written over: refuse it.
      if (!touched.has(id)) {
        throw new Error(`Table "${projection.table}" loaded row ${id}, a key no event touched`);
      }
      found.set(id, row);
    }
    return found;
  }
}
