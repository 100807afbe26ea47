// The shape of a billed call as the ledger runs it, whatever its source (HTTP, SMTP, scheduler).
import type { Tx } from "../db/connect.ts";
import type { NewEvent } from "../../events/catalogue.ts";
import type { LogEndpoint } from "../../projections/call_logs.ts";
import type { WalletRow } from "../../projections/wallets.ts";

/** What the caller is answered: an HTTP response in all but name. */
export interface Reply {
  status: number;
  contentType: string;
  body: string;
}

/** What a command decided once it ran under the wallet's lock. */
export interface Decision {
  reply: Reply;
  /** Error text for the call log when the call failed. */
  error?: string;
  /** Domain events to append after the debit. */
  events?: NewEvent[];
  /** Credits actually charged when they differ from the command's cost (never more than the balance). */
  charge?: number;
}

export interface CallMeta {
  method: string;
  path: string;
  endpoint: LogEndpoint;
  /** performance.now() when the call started, for response_time_ms. */
  startedAt: number;
}

export interface BilledCommand {
  walletId: string;
  /** Credits the call costs; a balance below it answers 402 and changes nothing. */
  cost: number;
  call: CallMeta;
  idempotency?: { key: string; fingerprint: string };
  /**
   * A KV entry the command will read: the ledger fetches those of a whole batch in one query, in
   * the same round trip as the wallet locks, and hands them to decide through `reads`.
   */
  prefetch?: { kv: { bucket: string; key: string } };
  /** Runs under the wallet's row lock, in the ledger's transaction; reads projections, returns events. */
  decide(tx: Tx, wallet: WalletRow, now: Date, reads: BatchReads): Promise<Decision> | Decision;
}

/** Reads that see the batch's own earlier writes; prefetched where the command asked for it. */
export interface BatchReads {
  kv(bucket: string, key: string): Promise<string | undefined>;
}

export type LedgerResult =
  | { kind: "unauthorized" }
  | { kind: "answered"; reply: Reply; cost: number; balance: number; replayed: boolean };

export const INSUFFICIENT_CREDITS = "Insufficient credits";

export function textReply(status: number, body: string): Reply {
  return { status, contentType: "text/plain; charset=utf-8", body };
}

export function jsonReply(status: number, value: unknown): Reply {
  return { status, contentType: "application/json", body: JSON.stringify(value) };
}

/** A failed call: the reply is the error phrase, which the call log records too. */
export function failure(status: number, phrase: string, events?: NewEvent[]): Decision {
  return { reply: textReply(status, phrase), error: phrase, events };
}
