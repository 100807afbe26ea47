// One builder per billed webhook call (CONTRACT section 6): the registry's create, replace, patch,
// get, delete, list and test, and the delivery history's list, show, retry and recover. Each gives
// its price, reads and decision; none is open to scoped keys. The REST routes
// (http/routes/webhooks.ts, deliveries.ts) and the decision specs make their calls here.
import { billedCall } from "../calls/billed_call.ts";
import { WEBHOOK } from "../calls/prices.ts";
import {
  type CreateWebhook,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  type PatchWebhook,
  patchWebhook,
  type ReplaceWebhook,
  replaceWebhook,
  testNotSent,
  testSent,
  webhookReads,
  type WebhookState,
} from "./commands.ts";
import type { CallDecision } from "../ledger/command.ts";
import type { Reply } from "../calls/reply.ts";
import type { TestRecord, TestResult } from "./test_delivery.ts";
import {
  deliveryReads,
  type ListDeliveries,
  listDeliveries,
  listReads,
  recoverDeliveries,
  recoverReads,
  type RecoverWindow,
  retryDelivery,
  showDelivery,
} from "./deliveries/commands.ts";
import type { LinkSigning } from "./delivery_body.ts";

type Wallet = { walletId: string };
type OneWebhook = Wallet & { webhookId: string };
type OneDelivery = OneWebhook & { deliveryId: string };

/** A call deciding from the wallet's webhooks, schedules and health (webhookReads). */
function onWebhooks(walletId: string, decide: (state: WebhookState) => CallDecision<Reply>) {
  return billedCall({ price: WEBHOOK.price, reads: webhookReads(walletId), decide });
}

export const webhookCalls = {
  /** POST /webhook: a new webhook, or for single-webhook clients `default` created or replaced. */
  create({ walletId, ...request }: Wallet & CreateWebhook) {
    return onWebhooks(walletId, (state) => createWebhook(request, state));
  },
  /** PUT /webhook/{id}: new settings, every field given. */
  replace({ walletId, ...request }: Wallet & ReplaceWebhook) {
    return onWebhooks(walletId, (state) => replaceWebhook(request, state));
  },
  /** PATCH /webhook/{id}: the fields given, the others kept. */
  patch({ walletId, ...request }: Wallet & PatchWebhook) {
    return onWebhooks(walletId, (state) => patchWebhook(request, state));
  },
  /** GET /webhook/{id}. */
  get({ walletId, webhookId }: OneWebhook) {
    return onWebhooks(walletId, (state) => getWebhook(webhookId, state));
  },
  /** DELETE /webhook and /webhook/{id}. */
  delete({ walletId, webhookId }: OneWebhook) {
    return onWebhooks(walletId, (state) => deleteWebhook(webhookId, state));
  },
  /** GET /webhooks. */
  list({ walletId }: Wallet) {
    return onWebhooks(walletId, listWebhooks);
  },
  /** POST /webhook/test and /webhook/{id}/test when nothing was sent (the ledger answers it). */
  testNotSent({ walletId, webhookId }: OneWebhook) {
    return onWebhooks(walletId, (state) => testNotSent(webhookId, state));
  },
  /** The same test once sent (before it is billed, see test_delivery.ts), with its result. */
  testSent({ result, sent }: { result: TestResult; sent?: OneWebhook & { record: TestRecord } }) {
    return billedCall({ price: WEBHOOK.price, decide: () => testSent(result, sent) });
  },

  /** GET /webhook/{id}/deliveries: newest first, and a cursor when there are more. */
  deliveries(request: ListDeliveries) {
    return billedCall({
      price: WEBHOOK.price,
      reads: listReads(request),
      decide: (state) => listDeliveries(request, state),
    });
  },
  /** GET /webhook/{id}/deliveries/{deliveryId}; `signing` renders a payload not sent yet. */
  delivery({ walletId, webhookId, deliveryId, signing }: OneDelivery & { signing?: LinkSigning }) {
    return billedCall({
      price: WEBHOOK.price,
      reads: deliveryReads(walletId, webhookId, deliveryId),
      decide: (state) => showDelivery(state, { signing }),
    });
  },
  /** POST /webhook/{id}/deliveries/{deliveryId}/retry. */
  retry({ walletId, webhookId, deliveryId }: OneDelivery) {
    return billedCall({
      price: WEBHOOK.price,
      reads: deliveryReads(walletId, webhookId, deliveryId),
      decide: retryDelivery,
    });
  },
  /** POST /webhook/{id}/recover: the failed deliveries of a window queued again, paced per webhook. */
  recover({ request, now, intervalMs }: { request: RecoverWindow; now: Date; intervalMs?: number }) {
    return billedCall({
      price: WEBHOOK.price,
      reads: recoverReads(request, now),
      decide: (state) => recoverDeliveries(request, state, { intervalMs }),
    });
  },
};
