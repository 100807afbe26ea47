// The webhook registry's decisions (CONTRACT section 6), pure: from the wallet's webhooks and
// schedules as the batch sees them, the time and values drawn before, the reply and the events.
// Each costs the route's price whatever its outcome.
import { newEvent } from "../../events/catalogue.ts";
import type { CallDecision, DecideState } from "../ledger/command.ts";
import { read } from "../ledger/reads.ts";
import { answer, failure, jsonReply, type Reply, textReply } from "../calls/reply.ts";
import { inCreationOrder, walletWebhooksRead } from "../../projections/webhooks.ts";
import { scheduleAfterConfig, walletSchedulesRead } from "../../projections/schedules.ts";
import { walletHealthRead } from "../../projections/webhook_health.ts";
import {
  type FreshIdentity,
  newWebhookConfig,
  patchedSettings,
  replacedWebhookConfig,
  type WebhookConfig,
  type WebhookSettings,
} from "./config/config.ts";
import { eventDataOf } from "../../projections/webhook_config_data.ts";
import { DEFAULT_WEBHOOK_ID, MAX_WEBHOOKS_PER_WALLET, type PatchWebhookInput } from "./config/input.ts";
import { validateSettings } from "./config/rules.ts";
import { webhookView } from "./config/view.ts";
import type { TestRecord, TestResult } from "./test_delivery.ts";
import type { KeepTestDelivery } from "./outbox_effects.ts";
import { pauseChange, pauseOf } from "./pause.ts";

export const WEBHOOK_NOT_FOUND = "Webhook not found";
const NOT_ATTEMPTED = "webhook call failed: not attempted, please retry";

/** What every webhook command reads: the wallet's webhooks, their schedules and their health. */
export function webhookReads(walletId: string) {
  return {
    webhooks: read(walletWebhooksRead, walletId),
    schedules: read(walletSchedulesRead, walletId),
    health: read(walletHealthRead, walletId),
  };
}
export type WebhookReads = ReturnType<typeof webhookReads>;
export type WebhookState = DecideState<WebhookReads>;

export interface CreateWebhook {
  /** Absent for single-webhook clients: their POST creates or replaces `default`. */
  webhookId?: string;
  settings: WebhookSettings;
  fresh: FreshIdentity;
}

export function createWebhook(request: CreateWebhook, state: WebhookState): CallDecision<Reply> {
  const webhooks = state.reads.webhooks ?? new Map<string, WebhookConfig>();
  const webhookId = request.webhookId ?? DEFAULT_WEBHOOK_ID;
  const existing = webhooks.get(webhookId);
  if (existing) {
    if (request.webhookId !== undefined) return failure(409, `Webhook "${webhookId}" already exists`);
    return configChangeDecision(
      state,
      "WebhookUpdated",
      replacedWebhookConfig(existing, request.settings, request.fresh),
    );
  }
  if (webhooks.size >= MAX_WEBHOOKS_PER_WALLET) {
    return failure(400, `Too many webhooks: at most ${MAX_WEBHOOKS_PER_WALLET} per wallet`);
  }
  const createdAt = nextCreationTime(webhooks.values(), state.now);
  const created = newWebhookConfig(webhookId, request.settings, { createdAt, fresh: request.fresh });
  return configChangeDecision(state, "WebhookCreated", created);
}

/** Creation times order the list; under the wallet lock, one past the newest keeps them distinct. */
function nextCreationTime(webhooks: Iterable<WebhookConfig>, now: Date): Date {
  const newest = Math.max(-Infinity, ...[...webhooks].map((webhook) => webhook.createdAt.getTime()));
  return newest >= now.getTime() ? new Date(newest + 1) : now;
}

export interface ReplaceWebhook {
  webhookId: string;
  settings: WebhookSettings;
  fresh: FreshIdentity;
}

export function replaceWebhook(request: ReplaceWebhook, state: WebhookState): CallDecision<Reply> {
  const existing = state.reads.webhooks?.get(request.webhookId);
  if (!existing) return failure(404, WEBHOOK_NOT_FOUND);
  return configChangeDecision(
    state,
    "WebhookUpdated",
    replacedWebhookConfig(existing, request.settings, request.fresh),
  );
}

export interface PatchWebhook {
  webhookId: string;
  patch: PatchWebhookInput;
  fresh: FreshIdentity;
  /** UNSAFE_ALLOW_PRIVATE_WEBHOOKS. */
  allowPrivate: boolean;
}

export function patchWebhook(request: PatchWebhook, state: WebhookState): CallDecision<Reply> {
  const existing = state.reads.webhooks?.get(request.webhookId);
  if (!existing) return failure(404, WEBHOOK_NOT_FOUND);
  const { active, ...fields } = request.patch;
  const changes = Object.values(fields).some((value) => value !== undefined);
  let next = existing;
  if (changes) {
    // What a patch leaves depends on the current configuration, so its rules are checked here, on it.
    const patched = patchedSettings(existing, fields);
    const settings = patched.ok
      ? validateSettings(patched.value, { allowPrivate: request.allowPrivate, now: state.now })
      : patched;
    if (!settings.ok) return failure(400, settings.phrase);
    next = replacedWebhookConfig(existing, settings.value, request.fresh);
  }
  if (active !== undefined && next.mode === "scheduled") {
    return failure(400, "Invalid active: a scheduled webhook pauses with schedule.active");
  }
  return configChangeDecision(state, "WebhookUpdated", next, { requested: active, changed: changes });
}

export function deleteWebhook(webhookId: string, state: WebhookState): CallDecision<Reply> {
  if (!state.reads.webhooks?.get(webhookId)) return failure(404, WEBHOOK_NOT_FOUND);
  // Deliveries waiting for a resume become due, and find their webhook gone (given up, not sent).
  const paused = pauseOf(state.reads.health?.get(webhookId));
  const release = { type: "holdWebhookDeliveries", walletId: state.wallet.wallet_id, webhookId, hold: false };
  return answer(textReply(200, "OK"), {
    events: [newEvent("WebhookDeleted", { webhookId })],
    ...(paused ? { effects: [release] } : {}),
  });
}

export function getWebhook(webhookId: string, { wallet, reads, now }: WebhookState): CallDecision<Reply> {
  const webhook = reads.webhooks?.get(webhookId);
  if (!webhook) return failure(404, WEBHOOK_NOT_FOUND);
  const schedule = reads.schedules?.get(webhookId);
  const pause = pauseOf(reads.health?.get(webhookId));
  return answer(jsonReply(200, webhookView(webhook, { hash: wallet.wallet_id, now, schedule, pause })));
}

export function listWebhooks({ wallet, reads, now }: WebhookState): CallDecision<Reply> {
  const views = inCreationOrder(reads.webhooks?.values() ?? []).map((webhook) =>
    webhookView(webhook, {
      hash: wallet.wallet_id,
      now,
      schedule: reads.schedules?.get(webhook.webhookId),
      pause: pauseOf(reads.health?.get(webhook.webhookId)),
    })
  );
  return answer(jsonReply(200, { webhooks: views }));
}

/**
 * A test that sent nothing because the ledger answers it (404, 402, a remembered reply); only a
 * race (the webhook created or the wallet recharged meanwhile) finds the webhook here.
 */
export function testNotSent(webhookId: string, { reads }: WebhookState): CallDecision<Reply> {
  if (!reads.webhooks?.get(webhookId)) return failure(404, WEBHOOK_NOT_FOUND);
  return answer(jsonReply(200, { success: false, message: NOT_ATTEMPTED }), { error: NOT_ATTEMPTED });
}

/**
 * A test that was sent: 200 either way, and the call log keeps a failure's reason. With its
 * record, the delivery history keeps it too (WebhookTested, and its body and answer beside it).
 */
export function testSent(
  result: TestResult,
  sent?: { walletId: string; webhookId: string; record: TestRecord },
): CallDecision<Reply> {
  const error = result.success ? {} : { error: result.message };
  if (!sent) return answer(jsonReply(200, result), error);
  const { walletId, webhookId, record } = sent;
  const tested = newEvent("WebhookTested", {
    deliveryId: record.deliveryId,
    webhookId,
    messageId: record.messageId,
    at: record.at.toISOString(),
    ok: record.ok,
    ...(record.status !== undefined ? { status: record.status } : {}),
    ...(record.error !== undefined ? { error: record.error } : {}),
    latencyMs: record.latencyMs,
  });
  const kept: KeepTestDelivery = {
    type: "keepTestDelivery",
    walletId,
    deliveryId: record.deliveryId,
    webhookId,
    messageId: record.messageId,
    trace: {
      // The test's one attempt is named after its delivery in the history.
      attemptId: record.deliveryId,
      ...(record.sentBody !== undefined ? { sentBody: record.sentBody } : {}),
      ...(record.excerpt !== undefined ? { excerpt: record.excerpt } : {}),
    },
  };
  return answer(jsonReply(200, result), { ...error, events: [tested], effects: [kept] });
}

/**
 * The answer to a configuration change: the webhook as the event leaves it (with its signing key
 * when created), its schedule folded the way the schedule model folds it, its pause, and the
 * events. `changed` false: only the pause was asked for (PATCH with `active` alone).
 */
function configChangeDecision(
  state: WebhookState,
  type: "WebhookCreated" | "WebhookUpdated",
  next: WebhookConfig,
  options: { requested?: boolean; changed?: boolean } = {},
): CallDecision<Reply> {
  const walletId = state.wallet.wallet_id;
  const data = eventDataOf(next);
  const created = type === "WebhookCreated";
  const changed = options.changed ?? true;
  const previous = state.reads.schedules?.get(next.webhookId);
  const schedule = changed
    ? scheduleAfterConfig(previous, { walletId, config: data, at: state.now, created })
    : previous;
  const existing = created ? undefined : state.reads.webhooks?.get(next.webhookId);
  const health = created ? undefined : state.reads.health?.get(next.webhookId);
  const paused = pauseChange(walletId, {
    previous: existing,
    next,
    health,
    requested: options.requested,
    now: state.now,
  });
  const view = webhookView(next, {
    hash: walletId,
    now: state.now,
    includeSecret: created,
    schedule,
    pause: paused.pause,
  });
  const events = [...(changed ? [newEvent(type, data)] : []), ...paused.events];
  return answer(jsonReply(200, view), {
    events,
    ...(paused.effects.length ? { effects: paused.effects } : {}),
  });
}
