// What a ledger transaction writes: the staged events (numbered after each wallet's version), the
// wallet rows folded from them, the other read models and the commands' effects. Rows that
// commands of the same batch read are kept current in memory by BatchReads; the tables are
// written at the end, each insert-only model and each effect type in one statement where it can.
import type { Tx } from "../db/connect.ts";
import { appendStaged, stageEvents } from "../../events/store.ts";
import type { NewEvent, StoredEvent } from "../../events/catalogue.ts";
import { applyInline, type Projection } from "../../projections/projection.ts";
import { INLINE_PROJECTIONS } from "../../projections/mod.ts";
import { evolveWallet, saveWallets, type WalletRow } from "../../projections/wallets.ts";
import type { Effect } from "./command.ts";
import type { BatchReads } from "./reads.ts";

/** How the module that owns a table applies one type of effect. */
export interface EffectApplier<E extends Effect = Effect> {
  /** Applies every effect of its type in a transaction, in the order the commands decided them. */
  apply(tx: Tx, effects: E[], now: Date): Promise<void>;
  /** Told after the transaction committed (wake a worker; never before the rows are visible). */
  afterCommit?(effects: E[]): void;
}

export type EffectAppliers = Record<string, EffectApplier<any>>;

export class PendingWrites {
  readonly events: StoredEvent[] = [];
  readonly wallets = new Map<string, WalletRow>();
  readonly #deferred = new Map<Projection<any>, unknown[]>();
  readonly #effects = new Map<string, Effect[]>();

  constructor(readonly appliers: EffectAppliers, readonly reads?: BatchReads) {}

  /** Stages a wallet's events after its version; returns the wallet row they leave. */
  async stage(
    tx: Tx,
    walletId: string,
    wallet: WalletRow | undefined,
    events: NewEvent[],
    now: Date,
  ): Promise<WalletRow | undefined> {
    const staged = stageEvents(walletId, wallet?.version ?? 0, events, now);
    const next = staged.reduce<WalletRow | undefined>(evolveWallet, wallet);
    if (next) this.wallets.set(walletId, next);
    this.events.push(...staged);
    for (const event of staged) {
      this.reads?.observe(event);
      for (const projection of INLINE_PROJECTIONS) await this.#project(tx, projection, event);
    }
    return next;
  }

  async #project(tx: Tx, projection: Projection<any>, event: StoredEvent) {
    if (!projection.saveMany || projection.keyOf(event) === null) {
      return await applyInline(tx, projection, event);
    }
    const row = projection.evolve(undefined, event);
    if (!row) return;
    const rows = this.#deferred.get(projection);
    if (rows) rows.push(row);
    else this.#deferred.set(projection, [row]);
  }

  addEffects(effects: Effect[] = []): void {
    for (const effect of effects) {
      if (!this.appliers[effect.type]) throw new Error(`No applier for effect "${effect.type}"`);
      const same = this.#effects.get(effect.type);
      if (same) same.push(effect);
      else this.#effects.set(effect.type, [effect]);
    }
  }

  /** Writes everything staged: independent statements, sent together (one round trip). */
  async flush(tx: Tx, now: Date): Promise<void> {
    await Promise.all([
      appendStaged(tx, this.events),
      saveWallets(tx, [...this.wallets.values()]),
      ...[...this.#deferred].map(([projection, rows]) => projection.saveMany!(tx, rows)),
      ...[...this.#effects].map(([type, effects]) => this.appliers[type].apply(tx, effects, now)),
    ]);
  }

  /** Tells the appliers that their effects are committed. */
  committed(): void {
    for (const [type, effects] of this.#effects) this.appliers[type].afterCommit?.(effects);
  }
}
