// Given events / when command / then decision: the specification of a command's pure decision, in
// the manner of Emmett's DeciderSpecification, with no database. The given events are folded into
// the wallet row and into every read the command declares, with the same folds the ledger keeps
// them current with; then the ledger's own choice of decision (the caller's gate, unpaid, mismatch or
// decide) runs.
import assert from "node:assert/strict";
import type { NewEvent, StoredEvent } from "../../events/catalogue.ts";
import { evolveWallet, type WalletRow } from "../../projections/wallets.ts";
import type { BilledCommand, CallDecision, Decision, UnbilledCommand } from "../../src/ledger/command.ts";
import type { ReadSet, ReadValues } from "../../src/ledger/reads.ts";
import { chooseDecision, type KeptState } from "../../src/ledger/run_batch.ts";
import { type BilledCall, billedCommand } from "../../src/calls/billed_call.ts";
import type { Reply } from "../../src/calls/reply.ts";
import type { LogEndpoint } from "../../projections/call_logs.ts";

export const WALLET = "a".repeat(64);
export const NOW = new Date("2027-03-01T12:00:00.000Z");

/** A wallet's stream as the log stores it, one second apart, ending a minute before NOW. */
export function stream(events: NewEvent[], walletId = WALLET): StoredEvent[] {
  const start = NOW.getTime() - 60_000 - events.length * 1000;
  return events.map((event, i) => ({
    ...event,
    walletId,
    version: i + 1,
    position: i + 1,
    recordedAt: new Date(start + i * 1000),
  } as StoredEvent));
}

/** The values the command's reads have after the given events; `overrides` for reads no event makes. */
export function foldReads<R extends ReadSet>(
  reads: R | undefined,
  given: StoredEvent[],
  overrides: Partial<ReadValues<R>> = {},
): ReadValues<R> {
  const values: Record<string, unknown> = {};
  for (const [name, { kind, key }] of Object.entries(reads ?? {})) {
    const id = kind.id(key);
    values[name] = given.reduce<unknown>(
      (value, event) => kind.touches(event).includes(id) ? kind.evolve(value, event) : value,
      undefined,
    );
  }
  return { ...values, ...overrides } as ReadValues<R>;
}

export function walletAfter(given: StoredEvent[]): WalletRow | undefined {
  return given.reduce<WalletRow | undefined>(evolveWallet, undefined);
}

export interface When<O> {
  /** What the ledger would decide for the command, with what the given events leave. */
  decision: Decision<O>;
  /** The decision is a call; fails the test otherwise. */
  call(): CallDecision<O>;
  /** The events of the call, by type and data. */
  events(): NewEvent[];
}

function when<O>(decision: Decision<O>): When<O> {
  return {
    decision,
    call: () => decision.log ? decision as CallDecision<O> : assert.fail("the decision is no call"),
    events: () => (decision.log ? (decision as CallDecision<O>).events ?? [] : []),
  };
}

/**
 * The command a billed call (its feature's builder: kv/calls.ts) makes, through billedCommand as the
 * REST route and the MCP tool make it: for the wallet's token, or for the scoped key `by`; `at` is
 * what its call log shows.
 */
export function commandOfCall<R extends ReadSet>(
  call: BilledCall<R>,
  at: { method: string; path: string; endpoint: LogEndpoint } = {
    method: "GET",
    path: "/kv/b/k",
    endpoint: "kv",
  },
  by?: { keyId: string },
): BilledCommand<Reply, R> {
  const caller = { walletId: WALLET, key: by && { keyId: by.keyId, hash: `hash-${by.keyId}` } };
  const made = { caller, at: { ...at, startedAt: 0 }, routePrice: 0 };
  return billedCommand(call, made) as unknown as BilledCommand<Reply, R>;
}

/** Decides a billed command after `given`, as the ledger would. */
export function decideBilled<O, R extends ReadSet>(
  given: NewEvent[],
  command: BilledCommand<O, R>,
  options: { overrides?: Partial<ReadValues<R>>; now?: Date; keyUsedElsewhere?: boolean; kept?: KeptState } =
    {},
): When<O> {
  const stored = stream(given, command.walletId);
  const wallet = walletAfter(stored) ?? assert.fail("the given events open no wallet");
  const state = {
    wallet,
    reads: foldReads(command.reads, stored, options.overrides),
    now: options.now ?? NOW,
  };
  const kept = options.kept ?? (options.keyUsedElsewhere ? "other" : "none");
  const choice = chooseDecision(command, state, kept);
  return when(choice.replay ? assert.fail("the kept answer is replayed") : choice.decision);
}

/** Decides an unbilled command after `given`. */
export function decideUnbilled<O, R extends ReadSet>(
  given: NewEvent[],
  command: UnbilledCommand<O, R>,
  options: { overrides?: Partial<ReadValues<R>>; now?: Date } = {},
) {
  const stored = stream(given, command.walletId);
  return command.decide({
    wallet: walletAfter(stored),
    reads: foldReads(command.reads, stored, options.overrides),
    now: options.now ?? NOW,
  });
}
