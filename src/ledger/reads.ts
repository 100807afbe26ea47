// What commands read: each declares its reads up front as named `Read`s; the ledger loads every
// read of a batch together (one statement per kind, in the round trip that locks the wallets) and
// keeps the values current with the batch's own events, so decide is a pure function of them.
import type { Queryable } from "../db/connect.ts";
import type { StoredEvent } from "../../events/catalogue.ts";
import type { ReadKind } from "../../projections/projection.ts";

/** One declared read: a kind of row and the key of the row. */
export interface Read<Value> {
  kind: ReadKind<unknown, Value>;
  key: unknown;
}

export type ReadSet = Record<string, Read<unknown>>;

/** What a command's decide gets for its reads: each row, or undefined when there is none. */
export type ReadValues<R extends ReadSet> = {
  [Name in keyof R]: R[Name] extends Read<infer Value> ? Value | undefined : never;
};

export function read<Key, Value>(kind: ReadKind<Key, Value>, key: Key): Read<Value> {
  return { kind: kind as ReadKind<unknown, Value>, key };
}

interface Entry {
  key: unknown;
  value: unknown;
}

/** The values of a batch's reads, loaded once and folded forward with every staged event. */
export class BatchReads {
  readonly #kinds = new Map<string, { kind: ReadKind<unknown, unknown>; entries: Map<string, Entry> }>();

  constructor(readSets: Iterable<ReadSet | undefined>) {
    for (const reads of readSets) {
      for (const { kind, key } of Object.values(reads ?? {})) {
        let group = this.#kinds.get(kind.name);
        if (!group) this.#kinds.set(kind.name, group = { kind, entries: new Map() });
        else if (group.kind !== kind) throw new Error(`Two read kinds are named "${kind.name}"`);
        group.entries.set(kind.id(key), { key, value: undefined });
      }
    }
  }

  /** Loads every read, one statement per kind, all sent at once. */
  async load(sql: Queryable, now: Date): Promise<void> {
    await Promise.all([...this.#kinds.values()].map(async ({ kind, entries }) => {
      const found = await kind.load(sql, [...entries.values()].map((e) => e.key), now);
      // An id the kind's keys do not give means its id and its loader disagree: every read of the
      // row would find nothing (a KV 404, say), so this fails instead.
      for (const id of found.keys()) {
        if (!entries.has(id)) {
          throw new Error(`Read "${kind.name}" loaded a value under id ${id}, which no key has`);
        }
      }
      for (const [id, entry] of entries) entry.value = found.get(id);
    }));
  }

  valuesOf<R extends ReadSet>(reads: R | undefined): ReadValues<R> {
    const values: Record<string, unknown> = {};
    for (const [name, { kind, key }] of Object.entries(reads ?? {})) {
      values[name] = this.#kinds.get(kind.name)!.entries.get(kind.id(key))!.value;
    }
    return values as ReadValues<R>;
  }

  /** Folds an event the batch staged into every loaded value it touches. */
  observe(event: StoredEvent): void {
    for (const { kind, entries } of this.#kinds.values()) {
      for (const id of kind.touches(event)) {
        const entry = entries.get(id);
        if (entry) entry.value = kind.evolve(entry.value, event);
      }
    }
  }
}
