// The webhook registry's decisions (CONTRACT section 6), pure: from the wallet's webhooks and
// schedules as the batch sees them, the time and values drawn before, the reply and the events.
// Each costs the route's price whatever its outcome.
import { newEvent } from "../../events/catalogue.ts";
import type { CallDecision, DecideState } from "../ledger/command.ts";
import { read } from "../ledger/reads.ts";
import { answer, failure, jsonReply, type Reply, textReply } from "../http/reply.ts";
import { inCreationOrder, walletWebhooksRead } from "../../projections/webhooks.ts";
import { scheduleAfterConfig, walletSchedulesRead } from "../../projections/schedules.ts";
import {
  type FreshIdentity,
  newWebhookConfig,
  patchedSettings,
  replacedWebhookConfig,
  type WebhookConfig,
  type WebhookSettings,
} from "./config/config.ts";
import { eventDataOf } from "./config/event_data.ts";
import { DEFAULT_WEBHOOK_ID, MAX_WEBHOOKS_PER_WALLET, type PatchWebhookInput } from "./config/input.ts";
import { validateSettings } from "./config/rules.ts";
import { webhookView } from "./config/view.ts";
import type { TestResult } from "./test_delivery.ts";

export const WEBHOOK_NOT_FOUND = "Webhook not found";
const NOT_ATTEMPTED = "webhook call failed: not attempted, please retry";

/** What every webhook command reads: the wallet's webhooks and their schedules. */
export function webhookReads(walletId: string) {
  return {
    webhooks: read(walletWebhooksRead, walletId),
    schedules: read(walletSchedulesRead, walletId),
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
  // What a patch leaves depends on the current configuration, so its rules are checked here, on it.
  const patched = patchedSettings(existing, request.patch);
  const settings = patched.ok
    ? validateSettings(patched.value, { allowPrivate: request.allowPrivate, now: state.now })
    : patched;
  if (!settings.ok) return failure(400, settings.phrase);
  return configChangeDecision(
    state,
    "WebhookUpdated",
    replacedWebhookConfig(existing, settings.value, request.fresh),
  );
}

export function deleteWebhook(webhookId: string, state: WebhookState): CallDecision<Reply> {
  if (!state.reads.webhooks?.get(webhookId)) return failure(404, WEBHOOK_NOT_FOUND);
  return answer(textReply(200, "OK"), { events: [newEvent("WebhookDeleted", { webhookId })] });
}

export function getWebhook(webhookId: string, { wallet, reads, now }: WebhookState): CallDecision<Reply> {
  const webhook = reads.webhooks?.get(webhookId);
  if (!webhook) return failure(404, WEBHOOK_NOT_FOUND);
  const schedule = reads.schedules?.get(webhookId);
  return answer(jsonReply(200, webhookView(webhook, { hash: wallet.wallet_id, now, schedule })));
}

export function listWebhooks({ wallet, reads, now }: WebhookState): CallDecision<Reply> {
  const views = inCreationOrder(reads.webhooks?.values() ?? []).map((webhook) =>
    webhookView(webhook, { hash: wallet.wallet_id, now, schedule: reads.schedules?.get(webhook.webhookId) })
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

/** A test that was sent: 200 either way, and the call log keeps a failure's reason. */
export function testSent(result: TestResult): CallDecision<Reply> {
  return answer(jsonReply(200, result), result.success ? {} : { error: result.message });
}

/**
 * The answer to a configuration change: the webhook as the event leaves it (with its signing key
 * when created), its schedule folded the way the schedule model folds it, and the event.
 */
function configChangeDecision(
  state: WebhookState,
  type: "WebhookCreated" | "WebhookUpdated",
  next: WebhookConfig,
): CallDecision<Reply> {
  const walletId = state.wallet.wallet_id;
  const data = eventDataOf(next);
  const created = type === "WebhookCreated";
  const previous = state.reads.schedules?.get(next.webhookId);
  const schedule = scheduleAfterConfig(previous, walletId, data, { at: state.now, created });
  const view = webhookView(next, { hash: walletId, now: state.now, includeSecret: created, schedule });
  return answer(jsonReply(200, view), { events: [newEvent(type, data)] });
}
