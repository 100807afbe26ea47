// Given events and commands for the webhook decision specifications: the wallet, webhooks as their
// events record them, settings as requests resolve to, and `when`, which decides a command after
// the given events as the ledger would, with no database.
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import { commandOfCall, decideBilled, NOW, WALLET } from "./decider.ts";
import type { BilledCall } from "../../src/calls/billed_call.ts";
import type { ReadSet } from "../../src/ledger/reads.ts";
import { webhookCalls } from "../../src/webhooks/calls.ts";
import type { BilledCommand } from "../../src/ledger/command.ts";
import { type Reply } from "../../src/calls/reply.ts";
import type { FreshIdentity, MailboxSettings, WebhookSettings } from "../../src/webhooks/config/config.ts";
import type { WebhookConfigData } from "../../projections/webhook_config_data.ts";
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

/** The command a webhook call makes, as its route makes it. */
export function webhookCommand<R extends ReadSet>(call: BilledCall<R>): BilledCommand<Reply, R> {
  return commandOfCall(call, { method: "POST", path: "/webhook", endpoint: "webhook" });
}

export function when<R extends ReadSet>(given: NewEvent[], billedCall: BilledCall<R>, now = NOW) {
  const call = decideBilled(given, webhookCommand(billedCall), { now }).call();
  const body = call.outcome.contentType === "application/json" ? JSON.parse(call.outcome.body) : undefined;
  return { call, status: call.outcome.status, text: call.outcome.body, body, events: call.events ?? [] };
}

export const create = (webhookId?: string, settings = mailbox()) =>
  webhookCalls.create({ walletId: WALLET, webhookId, settings, fresh: FRESH });

export const patch = (webhookId: string, change: PatchWebhookInput) =>
  webhookCalls.patch({ walletId: WALLET, webhookId, patch: change, fresh: FRESH, allowPrivate: false });
