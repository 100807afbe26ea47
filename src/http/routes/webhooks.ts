// The webhook registry and test endpoint, both descriptions (spec 4.3 and 4.4, CONTRACT section 6):
// POST/GET/DELETE /webhook, POST /webhook/test, GET/PUT/PATCH/DELETE /webhook/{webhookId} and
// POST /webhook/{webhookId}/test; 1 credit each.
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { billed, billedFailure, billing, type RouteBilling } from "../billing.ts";
import { requireWallet } from "../middleware.ts";
import { answer, failure, jsonReply, type Reply, textReply } from "../reply.ts";
import type { CallDecision, DecideState } from "../../ledger/command.ts";
import { read } from "../../ledger/reads.ts";
import { newEvent } from "../../../events/catalogue.ts";
import {
  inCreationOrder,
  walletWebhooksRead,
  type WebhookConfigData,
  webhookRowOf,
} from "../../../projections/webhooks.ts";
import { findActiveWallet } from "../../../projections/wallets.ts";
import { findWebhook } from "../../../projections/webhooks.ts";
import { scheduleAfterConfig, walletSchedulesRead } from "../../../projections/schedules.ts";
import { findIdempotentReply } from "../../../projections/idempotent_replies.ts";
import {
  checkSettings,
  CreateWebhookInput,
  DEFAULT_WEBHOOK_ID,
  MAX_WEBHOOKS_PER_WALLET,
  PatchWebhookInput,
  ReplaceWebhookInput,
  settingsFromInput,
  WebhookIdParam,
  type WebhookSettings,
} from "../../webhooks/config_schema.ts";
import {
  type Fresh,
  newWebhookConfig,
  patchedSettings,
  replacedWebhookConfig,
  webhookView,
} from "../../webhooks/registry.ts";
import { linkSigning, renderDeliveryBody, signedPost } from "../../webhooks/deliver.ts";
import { testDelivery } from "../../webhooks/test_payload.ts";
import { newWebhookSecret } from "../../webhooks/signature.ts";
import { randomId, randomLowerId } from "../../ids.ts";
import {
  BILLING_NOTE,
  ERROR_RESPONSES,
  jsonOk,
  serve,
  textOk,
  textResponse,
  TokenHeader,
} from "../openapi.ts";
import { documentedJson, readJsonBody } from "../json_body.ts";
import type { Config } from "../../config.ts";
import { describeError } from "../../log.ts";

const WEBHOOK: RouteBilling = { price: 1, endpoint: "webhook" };

const WEBHOOK_NOT_FOUND = "Webhook not found";
const NOT_ATTEMPTED = "webhook call failed: not attempted, please retry";
/** Random characters of a mailbox name: `r_` + 24 of [a-z0-9], about 124 bits. */
const MAILBOX_RANDOM_CHARS = 24;

const Schedule = z.object({
  cron: z.string(),
  timezone: z.string(),
  active: z.boolean(),
  nextRunAt: z.string().nullable().openapi({ format: "date-time" }),
  lastRunAt: z.string().nullable().openapi({ format: "date-time" }),
  lastStatus: z.string().nullable(),
  lastError: z.string().nullable(),
});

const WebhookObject = z.object({
  webhookId: z.string(),
  webhook: z.string().openapi({ description: "The callback URL" }),
  headers: z.record(z.string(), z.string()).openapi({ description: 'Names only: values read as "***"' }),
  hash: z.string().openapi({ description: "SHA-256 of the wallet token" }),
  email: z.string().optional().openapi({ description: "Mailbox webhooks: the address receiving mail" }),
  format: z.string().optional(),
  template: z.record(z.string(), z.unknown()).optional(),
  options: z.record(z.string(), z.string()).optional()
    .openapi({ description: 'Sensitive values (names with key, token or secret) read as "***"' }),
  includeAttachments: z.boolean().optional(),
  schedule: Schedule.optional(),
  secret: z.string().optional().openapi({ description: "Only when created: the signing key, whsec_..." }),
}).openapi("Webhook");

const TestResult = z.object({ success: z.boolean(), message: z.string() }).openapi("WebhookTestResult");

const notFound = { 404: textResponse("`Webhook not found`") };

const createWebhook = createRoute({
  method: "post",
  path: "/webhook",
  summary: "Create a webhook (or, without webhookId, create or replace `default`)",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { headers: TokenHeader, body: documentedJson(CreateWebhookInput, "The configuration") },
  responses: {
    ...jsonOk("The webhook, with its signing secret when created", WebhookObject),
    ...ERROR_RESPONSES,
    409: textResponse('`Webhook "<id>" already exists`'),
  },
});

const listRoute = createRoute({
  method: "get",
  path: "/webhook",
  summary: "All webhooks, in creation order",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { headers: TokenHeader },
  responses: {
    ...jsonOk("The webhooks", z.object({ webhooks: z.array(WebhookObject) })),
    ...ERROR_RESPONSES,
  },
});

const deleteDefault = createRoute({
  method: "delete",
  path: "/webhook",
  summary: "Delete the `default` webhook (single-webhook clients)",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { headers: TokenHeader },
  responses: { ...textOk("`OK`"), ...ERROR_RESPONSES, ...notFound },
});

const testDefault = createRoute({
  method: "post",
  path: "/webhook/test",
  summary: "Send a test payload to the `default` webhook (single-webhook clients)",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { headers: TokenHeader },
  responses: {
    ...jsonOk("The outcome, 200 also when delivery failed", TestResult),
    ...ERROR_RESPONSES,
    ...notFound,
  },
});

const getRoute = createRoute({
  method: "get",
  path: "/webhook/{webhookId}",
  summary: "One webhook",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { headers: TokenHeader, params: WebhookIdParam },
  responses: { ...jsonOk("The webhook", WebhookObject), ...ERROR_RESPONSES, ...notFound },
});

const putRoute = createRoute({
  method: "put",
  path: "/webhook/{webhookId}",
  summary: "Replace a webhook's whole configuration",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: {
    headers: TokenHeader,
    params: WebhookIdParam,
    body: documentedJson(ReplaceWebhookInput, "The whole configuration; the path names the webhook"),
  },
  responses: { ...jsonOk("The webhook", WebhookObject), ...ERROR_RESPONSES, ...notFound },
});

const patchRoute = createRoute({
  method: "patch",
  path: "/webhook/{webhookId}",
  summary: "Change some fields of a webhook",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: {
    headers: TokenHeader,
    params: WebhookIdParam,
    body: documentedJson(
      PatchWebhookInput,
      "Fields to change: maps replace whole, schedule merges field by field, schedule null makes a mailbox webhook",
    ),
  },
  responses: { ...jsonOk("The webhook", WebhookObject), ...ERROR_RESPONSES, ...notFound },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/webhook/{webhookId}",
  summary: "Delete a webhook",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { headers: TokenHeader, params: WebhookIdParam },
  responses: { ...textOk("`OK`"), ...ERROR_RESPONSES, ...notFound },
});

const testRoute = createRoute({
  method: "post",
  path: "/webhook/{webhookId}/test",
  summary: "Send a test payload once, synchronously",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { headers: TokenHeader, params: WebhookIdParam },
  responses: {
    ...jsonOk("The outcome, 200 also when delivery failed", TestResult),
    ...ERROR_RESPONSES,
    ...notFound,
  },
});

type Ctx = Context<AppEnv>;

function walletReads(walletId: string) {
  return {
    webhooks: read(walletWebhooksRead, walletId),
    schedules: read(walletSchedulesRead, walletId),
  };
}
type WalletReads = ReturnType<typeof walletReads>;
type WebhookState = DecideState<WalletReads>;

export function webhookRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, createWebhook, (c) => create(c));
  serve(app, listRoute, (c) =>
    webhookCall(c, ({ wallet, reads, now }) => {
      const views = inCreationOrder(reads.webhooks?.values() ?? []).map((row) =>
        webhookView(row, { hash: wallet.wallet_id, now, schedule: reads.schedules?.get(row.webhook_id) })
      );
      return answer(jsonReply(200, { webhooks: views }));
    }));
  serve(app, deleteDefault, (c) => remove(c, DEFAULT_WEBHOOK_ID));
  serve(app, testDefault, (c) => sendTest(c, DEFAULT_WEBHOOK_ID));
  serve(app, getRoute, (c) => {
    const { webhookId } = c.req.valid("param");
    return webhookCall(c, ({ wallet, reads, now }) => {
      const row = reads.webhooks?.get(webhookId);
      if (!row) return failure(404, WEBHOOK_NOT_FOUND);
      const schedule = reads.schedules?.get(webhookId);
      return answer(jsonReply(200, webhookView(row, { hash: wallet.wallet_id, now, schedule })));
    });
  });
  serve(app, putRoute, (c) => replace(c, c.req.valid("param").webhookId));
  serve(app, patchRoute, (c) => patch(c, c.req.valid("param").webhookId));
  serve(app, deleteRoute, (c) => remove(c, c.req.valid("param").webhookId));
  serve(app, testRoute, (c) => sendTest(c, c.req.valid("param").webhookId));
}

/** A billed webhook call that decides from the wallet's webhooks and schedules. */
function webhookCall(c: Ctx, decide: (state: WebhookState) => CallDecision<Reply>): Promise<Response> {
  return billed(c, { reads: walletReads(c.get("walletId")!), decide });
}

/** Fresh values a change may need, drawn before the decision so it stays pure. */
function fresh(config: Config): Fresh {
  const mailboxAddress = `r_${randomLowerId(MAILBOX_RANDOM_CHARS)}@${config.mailDomain}`;
  const secret = newWebhookSecret();
  return { mailboxAddress: () => mailboxAddress, secret: () => secret };
}

/** The answer to a configuration change: the webhook as it now is, and the event that makes it so. */
function changed(
  state: WebhookState,
  type: "WebhookCreated" | "WebhookUpdated",
  next: WebhookConfigData,
): CallDecision<Reply> {
  const walletId = state.wallet.wallet_id;
  // The schedule as the event will leave it, folded the way the schedule model folds it.
  const previous = state.reads.schedules?.get(next.webhookId);
  const created = type === "WebhookCreated";
  const schedule = scheduleAfterConfig(previous, walletId, next, { at: state.now, created });
  const view = webhookView(webhookRowOf(walletId, next), {
    hash: walletId,
    now: state.now,
    includeSecret: created,
    schedule,
  });
  return answer(jsonReply(200, view), { events: [newEvent(type, next)] });
}

/** Settings that pass every rule, or the 400 phrase. */
function checked(c: Ctx, settings: WebhookSettings | string): WebhookSettings | string {
  if (typeof settings === "string") return settings;
  const { config, clock } = c.get("services");
  return checkSettings(settings, { allowPrivate: config.allowPrivateWebhooks, now: clock.now() }) ?? settings;
}

async function create(c: Ctx): Promise<Response> {
  const input = await readJsonBody(c, CreateWebhookInput);
  if (!input.ok) return billedFailure(c, 400, input.phrase);
  const settings = checked(c, settingsFromInput(input.value));
  if (typeof settings === "string") return billedFailure(c, 400, settings);
  const explicitId = input.value.webhookId;
  const webhookId = explicitId ?? DEFAULT_WEBHOOK_ID;
  const make = fresh(c.get("services").config);
  return webhookCall(c, (state) => {
    const webhooks = state.reads.webhooks ?? new Map();
    const existing = webhooks.get(webhookId);
    if (existing) {
      // Single-webhook clients send no webhookId: for them POST is an upsert of `default`.
      if (explicitId !== undefined) return failure(409, `Webhook "${webhookId}" already exists`);
      return changed(state, "WebhookUpdated", replacedWebhookConfig(existing, settings, make));
    }
    if (webhooks.size >= MAX_WEBHOOKS_PER_WALLET) {
      return failure(400, `Too many webhooks: at most ${MAX_WEBHOOKS_PER_WALLET} per wallet`);
    }
    // Creation times order the list; under the wallet lock, one past the newest keeps them distinct.
    const newest = Math.max(-Infinity, ...[...webhooks.values()].map((row) => row.created_at.getTime()));
    const createdAt = newest >= state.now.getTime() ? new Date(newest + 1) : state.now;
    return changed(state, "WebhookCreated", newWebhookConfig(webhookId, settings, createdAt, make));
  });
}

async function replace(c: Ctx, webhookId: string): Promise<Response> {
  const input = await readJsonBody(c, ReplaceWebhookInput);
  if (!input.ok) return billedFailure(c, 400, input.phrase);
  const settings = checked(c, settingsFromInput(input.value));
  if (typeof settings === "string") return billedFailure(c, 400, settings);
  const make = fresh(c.get("services").config);
  return webhookCall(c, (state) => {
    const existing = state.reads.webhooks?.get(webhookId);
    if (!existing) return failure(404, WEBHOOK_NOT_FOUND);
    return changed(state, "WebhookUpdated", replacedWebhookConfig(existing, settings, make));
  });
}

async function patch(c: Ctx, webhookId: string): Promise<Response> {
  const input = await readJsonBody(c, PatchWebhookInput);
  if (!input.ok) return billedFailure(c, 400, input.phrase);
  const make = fresh(c.get("services").config);
  return webhookCall(c, (state) => {
    const existing = state.reads.webhooks?.get(webhookId);
    if (!existing) return failure(404, WEBHOOK_NOT_FOUND);
    // The result depends on the current configuration, so its rules are checked here, on it.
    const settings = checked(c, patchedSettings(existing, input.value));
    if (typeof settings === "string") return failure(400, settings);
    return changed(state, "WebhookUpdated", replacedWebhookConfig(existing, settings, make));
  });
}

function remove(c: Ctx, webhookId: string): Promise<Response> {
  return webhookCall(c, ({ reads }) => {
    if (!reads.webhooks?.get(webhookId)) return failure(404, WEBHOOK_NOT_FOUND);
    return answer(textReply(200, "OK"), { events: [newEvent("WebhookDeleted", { webhookId })] });
  });
}

/**
 * One synchronous attempt, made before the call is billed: the ledger transaction holds the
 * wallet's lock, which must not wait up to 10 s on a stranger's server. So the call is checked
 * first (webhook, credits, replayed Idempotency-Key) to POST only when the ledger will serve it,
 * and billed after, with the outcome as its answer.
 */
async function sendTest(c: Ctx, webhookId: string): Promise<Response> {
  const { sql, config, clock } = c.get("services");
  const walletId = c.get("walletId")!;
  const key = c.req.header("idempotency-key");
  const [wallet, webhook, prior] = await Promise.all([
    findActiveWallet(sql, walletId),
    findWebhook(sql, walletId, webhookId),
    key === undefined ? undefined : findIdempotentReply(sql, walletId, key, clock.now()),
  ]);
  if (!webhook || !wallet || wallet.balance < WEBHOOK.price || prior) {
    // The ledger answers these (404, 402, the remembered reply) without running a delivery.
    return webhookCall(c, ({ reads }) =>
      // Only a race lands here with the webhook present (created or recharged meanwhile).
      reads.webhooks?.get(webhookId)
        ? answer(jsonReply(200, { success: false, message: NOT_ATTEMPTED }), { error: NOT_ATTEMPTED })
        : failure(404, WEBHOOK_NOT_FOUND));
  }

  const now = clock.now();
  let outcome: { success: boolean; message: string };
  try {
    const content = testDelivery(webhook, {
      hash: walletId,
      mailDomain: config.mailDomain,
      now,
      nonce: randomLowerId(16),
    });
    const body = await renderDeliveryBody(webhook, content, await linkSigning(sql, config), now);
    const result = await signedPost(webhook, body, {
      messageId: `test_${randomId(24)}`,
      now,
      allowPrivate: config.allowPrivateWebhooks,
    });
    outcome = result.ok
      ? { success: true, message: "test webhook delivered" }
      : { success: false, message: `webhook call failed: ${result.error}` };
  } catch (error) {
    const reason = describeError(error);
    outcome = {
      success: false,
      message: `webhook call failed: cannot render payload: ${reason.slice(0, 200)}`,
    };
  }
  return webhookCall(
    c,
    () => answer(jsonReply(200, outcome), outcome.success ? {} : { error: outcome.message }),
  );
}
