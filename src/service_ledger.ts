// The service's ledger: the generic ledger with the effects and debit rules of this service's
// features plugged in, each from the module that owns it. The one place that names them all.
import type { Sql } from "./db/connect.ts";
import type { Clock } from "./clock.ts";
import { createLedger, type Ledger, type LedgerOptions } from "./ledger/ledger.ts";
import type { EffectApplier } from "./ledger/pending_writes.ts";
import {
  completeDeliveries,
  type CompleteDelivery,
  type HoldWebhookDeliveries,
  holdWebhookDeliveries,
  keepTestDeliveries,
  type KeepTestDelivery,
  newDeliveryId,
  newMessageId,
  queueDeliveries,
  type QueueDelivery,
  requeueDeliveries,
  type RequeueDelivery,
  rescheduleDeliveries,
  type RescheduleDelivery,
} from "./webhooks/mod.ts";
import { type StoreAttachment, storeAttachments } from "./attachments/store.ts";
import { type EndScheduleClaim, endScheduleClaims } from "./schedules/claims.ts";
import { type RecordTokenRequest, recordTokenRequests } from "./wallets/token_requests.ts";
import { lowBalanceRule } from "./alerts/low_balance.ts";
import { type EraseWallet, eraseWallets } from "./wallets/erasure.ts";

/** Every effect a command of this service may return. */
export type ServiceEffect =
  | QueueDelivery
  | RescheduleDelivery
  | CompleteDelivery
  | RequeueDelivery
  | HoldWebhookDeliveries
  | KeepTestDelivery
  | StoreAttachment
  | EndScheduleClaim
  | RecordTokenRequest
  | EraseWallet;

type Appliers = { [T in ServiceEffect["type"]]: EffectApplier<Extract<ServiceEffect, { type: T }>> };

export interface ServiceLedgerOptions extends Omit<LedgerOptions, "effects" | "rules"> {
  /** Told after a commit that made deliveries due (the delivery worker's wake-up). */
  onDeliveryQueued?: () => void;
}

export function createServiceLedger(sql: Sql, clock: Clock, options: ServiceLedgerOptions = {}): Ledger {
  const { onDeliveryQueued, ...ledgerOptions } = options;
  const due = () => onDeliveryQueued?.();
  const effects: Appliers = {
    queueDelivery: queueDeliveries(due),
    rescheduleDelivery: rescheduleDeliveries,
    completeDelivery: completeDeliveries,
    requeueDelivery: requeueDeliveries(due),
    holdWebhookDeliveries: holdWebhookDeliveries(due),
    keepTestDelivery: keepTestDeliveries,
    storeAttachment: storeAttachments,
    endScheduleClaim: endScheduleClaims,
    recordTokenRequest: recordTokenRequests,
    eraseWallet: eraseWallets(options.sealer),
  };
  return createLedger(sql, clock, {
    ...ledgerOptions,
    effects,
    rules: [lowBalanceRule({ newDeliveryId, newMessageId })],
  });
}
