// The deliveries API's decisions (issue 13), pure: a page of a webhook's deliveries, one with its
// payload, one sent again, and the failed ones of a window sent again, at most one such recover
// per webhook per interval (issue 21). Each costs the route's price (1) whatever its outcome;
// sending again never charges the email or the run a second time (its attempts show no cost), and
// it goes out with the same webhook-id and a fresh signature.
import { newEvent } from "../../../events/catalogue.ts";
import type { CallDecision, DecideState } from "../../ledger/command.ts";
import { read } from "../../ledger/reads.ts";
import { answer, failure, jsonReply, type Reply, textReply, TOO_MANY_REQUESTS } from "../../calls/reply.ts";
import { webhookRead } from "../../../projections/webhooks.ts";
import { webhookHealthRead, type WebhookHealthRow } from "../../../projections/webhook_health.ts";
import {
  type DeliveryDetail,
  deliveryDetailRead,
  deliveryPageRead,
  type DeliveryStatus,
  type PageCursor,
  recoverableRead,
} from "../../../projections/delivery_history_reads.ts";
import { DELIVERY_RETENTION_MS } from "../../../projections/delivery_retention_rules.ts";
import type { RequeueDelivery } from "../outbox_effects.ts";
import { WEBHOOK_NOT_FOUND } from "../commands.ts";
import { cursorAfter, deliveryView } from "./view.ts";
import { type LinkSigning, renderDeliveryBody, type WebhookContent } from "../delivery_body.ts";
import type { WebhookConfig } from "../config/config.ts";

export const DELIVERY_NOT_FOUND = "Delivery not found";
/** Deliveries one recover queues at most; a second call takes the next ones. */
export const MAX_RECOVER = 500;
/** WEBHOOK_RECOVER_INTERVAL_MS by default: one recover that queues deliveries per webhook in this time. */
export const DEFAULT_RECOVER_INTERVAL_MS = 60_000;

function target(walletId: string, webhookId: string) {
  return { walletId, webhookId };
}

export interface ListDeliveries {
  walletId: string;
  webhookId: string;
  status?: DeliveryStatus;
  limit: number;
  after?: PageCursor;
}

export function listReads(request: ListDeliveries) {
  return {
    webhook: read(webhookRead, target(request.walletId, request.webhookId)),
    page: read(deliveryPageRead, request),
  };
}
type ListState = DecideState<ReturnType<typeof listReads>>;

/** GET /webhook/<id>/deliveries: newest first, and a cursor when there are more. */
export function listDeliveries(request: ListDeliveries, { reads }: ListState): CallDecision<Reply> {
  if (!reads.webhook) return failure(404, WEBHOOK_NOT_FOUND);
  const page = reads.page ?? [];
  const shown = page.slice(0, request.limit);
  const nextCursor = page.length > request.limit ? cursorAfter(shown[shown.length - 1]) : null;
  return answer(jsonReply(200, { deliveries: shown.map(deliveryView), nextCursor }));
}

export function deliveryReads(walletId: string, webhookId: string, messageId: string) {
  return {
    webhook: read(webhookRead, target(walletId, webhookId)),
    health: read(webhookHealthRead, target(walletId, webhookId)),
    delivery: read(deliveryDetailRead, { walletId, webhookId, messageId }),
  };
}
type DeliveryState = DecideState<ReturnType<typeof deliveryReads>>;

/** A body as JSON, or as the text it is when it is not JSON. */
function asJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/**
 * What the delivery view shows as its payload: the body last sent; for one not sent yet (pending,
 * or held by a paused webhook) the body it will be sent with, rendered now in the webhook's format
 * as its attempt will render it (attachment links signed now, valid 1 hour); null when there is
 * nothing to render (the outbox row is gone, or the format cannot render it).
 */
function shownPayload(
  detail: DeliveryDetail,
  { webhook, signing, now }: { webhook: WebhookConfig; signing?: LinkSigning; now: Date },
): { payload: unknown; payloadSent: boolean } {
  if (detail.sentBody !== null) return { payload: asJson(detail.sentBody), payloadSent: true };
  const kind = detail.row.kind;
  if (!signing || !detail.kept || detail.content == null || (kind !== "email" && kind !== "scheduled")) {
    return { payload: null, payloadSent: false };
  }
  const content = { kind, webhookId: webhook.webhookId, payload: detail.content } as WebhookContent;
  try {
    return { payload: asJson(renderDeliveryBody(webhook, { content, signing, now })), payloadSent: false };
  } catch {
    // Its attempt will fail the same way, and say why.
    return { payload: null, payloadSent: false };
  }
}

/** GET /webhook/<id>/deliveries/<deliveryId>: the delivery and its body, sent or to be sent. */
export function showDelivery(
  state: DeliveryState,
  options: { signing?: LinkSigning } = {},
): CallDecision<Reply> {
  const { reads, now } = state;
  if (!reads.webhook) return failure(404, WEBHOOK_NOT_FOUND);
  const detail = reads.delivery;
  if (!detail) return failure(404, DELIVERY_NOT_FOUND);
  const shown = shownPayload(detail, { webhook: reads.webhook, signing: options.signing, now });
  return answer(jsonReply(200, { ...deliveryView(detail), ...shown }));
}

/** Whether an email of this webhook waits for a resume rather than going out now. */
function waits(detail: DeliveryDetail, state: DeliveryState | RecoverState): boolean {
  const { webhook, health } = state.reads;
  return detail.row.kind === "email" && webhook?.mode === "mailbox" && health?.paused_at != null;
}

/** One delivery queued again: its event, its effect, and how it shows after. */
function requeued(
  detail: DeliveryDetail,
  state: DeliveryState | RecoverState,
  reason: "retry" | "recover",
  nextRecoverAt?: Date,
) {
  const held = waits(detail, state);
  const { row } = detail;
  const event = newEvent("DeliveryRequeued", {
    deliveryId: row.delivery_id,
    webhookId: row.webhook_id,
    messageId: row.message_id ?? row.delivery_id,
    reason,
    ...(nextRecoverAt ? { nextRecoverAt: nextRecoverAt.toISOString() } : {}),
  });
  const effect: RequeueDelivery = {
    type: "requeueDelivery",
    walletId: row.wallet_id,
    deliveryId: row.delivery_id,
    held,
  };
  const shown: DeliveryDetail = {
    ...detail,
    status: held ? "paused" : "pending",
    row: { ...row, status: "pending", next_attempt_at: state.now },
  };
  return { event, effect, shown };
}

/**
 * POST /webhook/<id>/deliveries/<deliveryId>/retry: one more attempt now (at the resume when its
 * webhook is paused). A pending delivery's next attempt moves to now. A test is not sent again.
 */
export function retryDelivery(state: DeliveryState): CallDecision<Reply> {
  if (!state.reads.webhook) return failure(404, WEBHOOK_NOT_FOUND);
  const detail = state.reads.delivery;
  if (!detail || !detail.kept) return failure(404, DELIVERY_NOT_FOUND);
  if (detail.row.kind === "test") {
    const webhookId = detail.row.webhook_id;
    return failure(
      409,
      `Delivery "${detail.row.message_id}" is a test: send a new one with POST /webhook/${webhookId}/test`,
    );
  }
  const { event, effect, shown } = requeued(detail, state, "retry");
  return answer(jsonReply(200, deliveryView(shown)), { events: [event], effects: [effect] });
}

export interface RecoverWindow {
  walletId: string;
  webhookId: string;
  since: string;
  until?: string;
}

export function recoverReads(request: RecoverWindow, now: Date) {
  const until = request.until ?? now.toISOString();
  return {
    webhook: read(webhookRead, target(request.walletId, request.webhookId)),
    health: read(webhookHealthRead, target(request.walletId, request.webhookId)),
    failed: read(recoverableRead, {
      ...target(request.walletId, request.webhookId),
      since: request.since,
      until,
      limit: MAX_RECOVER,
    }),
  };
}
type RecoverState = DecideState<ReturnType<typeof recoverReads>>;

/** Whole seconds until the webhook's next recover may queue deliveries; 0 when it may now. */
export function recoverWaitSeconds(health: WebhookHealthRow | undefined, now: Date): number {
  const waitMs = (health?.recover_after?.getTime() ?? 0) - now.getTime();
  return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0;
}

/**
 * POST /webhook/<id>/recover: every failed or abandoned delivery of the window queued again. Paced:
 * a recover that queues deliveries makes the webhook's next one wait `intervalMs` (decided under
 * the wallet's lock, from the health model, so it holds across instances); one within it gets 429
 * with Retry-After, charged like any refusal. Requeued rows are claimed within the wallet's and the
 * endpoint's slot shares, so even a full recover only ever holds its own wallet's slots.
 */
export function recoverDeliveries(
  request: RecoverWindow,
  state: RecoverState,
  options: { intervalMs?: number } = {},
): CallDecision<Reply> {
  const since = new Date(request.since);
  const until = request.until === undefined ? state.now : new Date(request.until);
  if (since.getTime() < state.now.getTime() - DELIVERY_RETENTION_MS) {
    return failure(400, `Invalid since "${request.since}": must be at most 7 days ago`);
  }
  if (until <= since) {
    return request.until === undefined
      ? failure(400, `Invalid since "${request.since}": must be in the past`)
      : failure(400, `Invalid until "${request.until}": must be after since`);
  }
  if (!state.reads.webhook) return failure(404, WEBHOOK_NOT_FOUND);
  const failed = state.reads.failed ?? [];
  const intervalMs = options.intervalMs ?? DEFAULT_RECOVER_INTERVAL_MS;
  // Nothing to queue is nothing to pace: it answers { queued: 0 } at any time.
  const wait = failed.length === 0 ? 0 : recoverWaitSeconds(state.reads.health, state.now);
  if (wait > 0) {
    const phrase = `${TOO_MANY_REQUESTS}: one recover per webhook every ${Math.ceil(intervalMs / 1000)} s, ` +
      `the next in ${wait} s`;
    return {
      outcome: { ...textReply(429, phrase), headers: { "retry-after": String(wait) } },
      log: { status: 429, error: phrase },
    };
  }
  const nextRecoverAt = new Date(state.now.getTime() + intervalMs);
  const queued = failed.map((detail, i) =>
    requeued(detail, state, "recover", i === 0 ? nextRecoverAt : undefined)
  );
  return answer(jsonReply(200, { queued: queued.length }), {
    events: queued.map((q) => q.event),
    effects: queued.map((q) => q.effect),
  });
}
