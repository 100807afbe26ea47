// The contract between a command and the ledger. A command is data: the wallet it bills, its
// price, its call-log fields and the reads it needs. Its decide is a pure function of the locked
// wallet, those reads and the time; it returns the outcome in the caller's own type, what the call
// log shows, the charge, the events and typed effects, and the ledger does the rest in one
// transaction. decide never sees a transaction or SQL.
import type { NewEvent } from "../../events/catalogue.ts";
import type { LogEndpoint } from "../../projections/call_logs.ts";
import type { WalletRow } from "../../projections/wallets.ts";
import type { ReadSet, ReadValues } from "./reads.ts";

export const INSUFFICIENT_CREDITS = "Insufficient credits";

/** The call-log fields of a billed call, known before it runs. */
export interface CallMeta {
  /** An HTTP method, or SMTP / CRON for mail and scheduled runs. */
  method: string;
  path: string;
  endpoint: LogEndpoint;
  /** performance.now() when the call started, for response_time_ms. */
  startedAt: number;
  /** The scoped key that made the call, shown in CallBilled and the call log; absent: the token. */
  keyId?: string;
}

/** What the call log shows of a call's outcome. */
export interface CallResult {
  status: number;
  error?: string;
}

/**
 * A side write the ledger applies in the command's transaction, after its events (an outbox row,
 * a stored file, the end of a schedule claim...). Each type has one applier, registered with the
 * ledger by the module that owns the table.
 */
export interface Effect {
  type: string;
}

/** A call: charged, logged as CallBilled, with its events and effects. */
export interface CallDecision<O> {
  outcome: O;
  log: CallResult;
  /** Credits charged; default the command's price. Never more than the balance. */
  charge?: number;
  events?: NewEvent[];
  effects?: Effect[];
}

/** No call happened (a claim gone stale): nothing is charged, logged or appended. */
export interface NoCall<O> {
  outcome: O;
  log?: undefined;
}

export type Decision<O> = CallDecision<O> | NoCall<O>;

export interface DecideState<R extends ReadSet> {
  /** The wallet as its row lock holds it, after the batch's earlier commands. */
  wallet: WalletRow;
  reads: ReadValues<R>;
  now: Date;
}

/** What an Idempotency-Key keeps of an answer for 24 hours (the IdempotentReply of CallBilled). */
export interface KeptReply {
  status: number;
  contentType: string;
  body: string;
}

export interface Idempotency<O> {
  key: string;
  /** The same key with another fingerprint is another request: `mismatch` answers it. */
  fingerprint: string;
  /** What a retry with the key is answered; undefined keeps nothing (the retry is decided anew). */
  keep(outcome: O, log: CallResult): KeptReply | undefined;
  replay(kept: KeptReply): O;
  mismatch(): CallDecision<O>;
}

/**
 * What the caller's credentials allow (a scoped key's rules), checked around the call's own
 * decision and before anything is charged or replayed; see chooseDecision for the order. Pure.
 */
export interface CallGate<O, R extends ReadSet = ReadSet> {
  /** First of all, before a kept answer: the answer when the caller may not call at all. */
  unauthorized(state: DecideState<R>): NoCall<O> | undefined;
  /** Instead of the command's decision when the caller may not make this call. */
  forbidden(state: DecideState<R>): CallDecision<O> | undefined;
  /** The decision, charging nothing, when charging `charge` would be more than the caller may spend. */
  overSpend(state: DecideState<R>, charge: number): CallDecision<O> | undefined;
}

export interface BilledCommand<O, R extends ReadSet = ReadSet> {
  walletId: string;
  /** What the call costs; with a lower balance `unpaid` decides instead of `decide`. */
  price: number;
  call: CallMeta;
  idempotency?: Idempotency<O>;
  reads?: R;
  /** The caller's own rules (a scoped key's); absent: the wallet's token, which may do anything. */
  gate?: CallGate<O, R>;
  decide(state: DecideState<R>): Decision<O>;
  /** The decision when the balance is below the price: it charges nothing. */
  unpaid(state: DecideState<R>): Decision<O>;
  /** Made by a client (HTTP, MCP) that repeats it at will: a client whose calls keep faulting is refused a while. */
  byClient?: boolean;
  /**
   * The answer to a call that would charge nothing while its wallet is past its allowance of free
   * calls (of refused mail, for mail), given the outcome it decided: nothing is written. Absent: the
   * command is not held to an allowance (scheduled runs, bounded by their pause).
   */
  throttled?(waitSeconds: number, decided: O): O;
}

/** Events appended to a wallet outside a billed call: payments, sweeps, delivery results. */
export interface UnbilledCommand<O, R extends ReadSet = ReadSet> {
  walletId: string;
  reads?: R;
  /** `wallet` is undefined for a wallet that does not exist yet, or never will. */
  decide(state: Omit<DecideState<R>, "wallet"> & { wallet: WalletRow | undefined }): {
    outcome: O;
    events?: NewEvent[];
    effects?: Effect[];
  };
}

export type LedgerResult<O> =
  | { kind: "unauthorized" }
  | { kind: "answered"; outcome: O; cost: number; balance: number; replayed: boolean };

/**
 * A rule every debit passes through, plugged in by the feature that owns it (the low-balance
 * alert): pure, from the wallet before the debit and the debit itself.
 */
export interface DebitRule {
  afterDebit(
    wallet: WalletRow,
    debit: { charge: number; balance: number; now: Date },
  ): { events?: NewEvent[]; effects?: Effect[] } | undefined;
}
