// Given events and commands for the webhook decision specifications: the wallet, webhooks as their
// events record them, settings as requests resolve to, and `when`, which decides a command after
// the given events as the ledger would, with no database.
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import { decideBilled, NOW, WALLET } from "./decider.ts";
import type { BilledCommand, CallDecision } from "../../src/ledger/command.ts";
import { failure, type Reply } from "../../src/calls/reply.ts";
import {
  createWebhook,
  patchWebhook,
  type WebhookReads,
  webhookReads,
  type WebhookState,
} from "../../src/webhooks/commands.ts";
import type { FreshIdentity, MailboxSettings, WebhookSettings } from "../../src/webhooks/config/config.ts";
import type { WebhookConfigData } from "../../src/webhooks/config/event_data.ts";
import type { PatchWebhookInput } from "../../src/webhooks/config/input.ts";

export const FRESH: FreshIdentity = { mailboxAddress: "r_fresh@mail.test", secret: "whsec_fresh" };
export const DAILY = { cron: "0 9 * * *", timezone: "UTC", active: true };
export const CREATED_AT = "2027-02-01T00:00:00.000Z";

export const opened = (credits = 100): NewEvent[] => [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: credits, balance: credits, reason: "welcome" }),
];

export function mailboxData(webhookId: string, more: Partial<WebhookConfigData> = {}): WebhookConfigData {
  return {
    webhookId,
    url: `https://hooks.example/${webhookId}`,
    headers: {},
    options: {},
    includeAttachments: true,
    email: `r_${webhookId}@mail.test`,
    secret: `whsec_${webhookId}`,
    createdAt: CREATED_AT,
    ...more,
  };
}

export function scheduledData(webhookId: string, more: Partial<WebhookConfigData> = {}): WebhookConfigData {
  return {
    webhookId,
    url: `https://hooks.example/${webhookId}`,
    headers: {},
    schedule: DAILY,
    secret: `whsec_${webhookId}`,
    createdAt: CREATED_AT,
    ...more,
  };
}

export const created = (data: WebhookConfigData) => newEvent("WebhookCreated", data);

export function mailbox(
  more: Partial<MailboxSettings> = {},
  url = "https://hooks.example/new",
): WebhookSettings {
  return { url, headers: {}, mode: "mailbox", mailbox: { options: {}, includeAttachments: true, ...more } };
}

export function scheduled(schedule = DAILY, url = "https://hooks.example/new"): WebhookSettings {
  return { url, headers: {}, mode: "scheduled", schedule };
}

export function webhookCommand(
  decide: (state: WebhookState) => CallDecision<Reply>,
): BilledCommand<Reply, WebhookReads> {
  return {
    walletId: WALLET,
    price: 1,
    call: { method: "POST", path: "/webhook", endpoint: "webhook", startedAt: 0 },
    reads: webhookReads(WALLET),
    decide,
    unpaid: () => failure(402, "Insufficient credits"),
  };
}

export function when(given: NewEvent[], decide: (state: WebhookState) => CallDecision<Reply>, now = NOW) {
  const call = decideBilled(given, webhookCommand(decide), { now }).call();
  const body = call.outcome.contentType === "application/json" ? JSON.parse(call.outcome.body) : undefined;
  return { call, status: call.outcome.status, text: call.outcome.body, body, events: call.events ?? [] };
}

export const create = (webhookId?: string, settings = mailbox()) => (state: WebhookState) =>
  createWebhook({ webhookId, settings, fresh: FRESH }, state);

export const patch = (webhookId: string, change: PatchWebhookInput) => (state: WebhookState) =>
  patchWebhook({ webhookId, patch: change, fresh: FRESH, allowPrivate: false }, state);
