// The webhook registry and test endpoint, both descriptions (spec 4.3 and 4.4, CONTRACT section 6):
// POST/GET/DELETE /webhook, POST /webhook/test, GET/PUT/PATCH/DELETE /webhook/{webhookId} and
// POST /webhook/{webhookId}/test; 1 credit each. The decisions are in webhooks/commands.ts, the
// synchronous test delivery in webhooks/test_delivery.ts.
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { billed, billedFailure, billing } from "../billing.ts";
import { requireWallet } from "../middleware.ts";
import {
  CreateWebhookInput,
  DEFAULT_WEBHOOK_ID,
  newWebhookIdentity,
  PatchWebhookInput,
  ReplaceWebhookInput,
  sendTestDelivery,
  settingsFromInput,
  TestResult,
  validateSettings,
  webhookCalls,
  WebhookIdParam,
  WebhookList,
  type WebhookSettings,
  WebhookView,
} from "../../webhooks/mod.ts";
import { WEBHOOK } from "../../calls/prices.ts";
import {
  billedRoute,
  BILLING_NOTE,
  BODY_REFUSED,
  ERROR_RESPONSES,
  errorResponseDoc,
  jsonOk,
  serve,
  textOk,
} from "../openapi.ts";
import { documentedJson, readJsonBody } from "../json_body.ts";
import type { Parsed } from "../../parsed.ts";

const notFound = { 404: errorResponseDoc("`Webhook not found`") };

const createWebhookRoute = billedRoute({
  method: "post",
  path: "/webhook",
  operationId: "createWebhook",
  summary: "Create a webhook (or, without webhookId, create or replace `default`)",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { body: documentedJson(CreateWebhookInput, "The configuration") },
  responses: {
    ...BODY_REFUSED,
    ...jsonOk("The webhook, with its signing secret when created", WebhookView),
    ...ERROR_RESPONSES,
    409: errorResponseDoc('`Webhook "<id>" already exists`'),
  },
});

const listRoute = billedRoute({
  method: "get",
  path: "/webhook",
  operationId: "listWebhooks",
  summary: "All webhooks, in creation order",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  responses: {
    ...jsonOk("The webhooks", WebhookList),
    ...ERROR_RESPONSES,
  },
});

const deleteDefault = billedRoute({
  method: "delete",
  path: "/webhook",
  operationId: "deleteDefaultWebhook",
  summary: "Delete the `default` webhook (single-webhook clients)",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  responses: { ...textOk("`OK`"), ...ERROR_RESPONSES, ...notFound },
});

const testDefault = billedRoute({
  method: "post",
  path: "/webhook/test",
  operationId: "testDefaultWebhook",
  summary: "Send a test payload to the `default` webhook (single-webhook clients)",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  responses: {
    ...jsonOk("The outcome, 200 also when delivery failed", TestResult),
    ...ERROR_RESPONSES,
    ...notFound,
  },
});

const getRoute = billedRoute({
  method: "get",
  path: "/webhook/{webhookId}",
  operationId: "getWebhook",
  summary: "One webhook",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { params: WebhookIdParam },
  responses: { ...jsonOk("The webhook", WebhookView), ...ERROR_RESPONSES, ...notFound },
});

const putRoute = billedRoute({
  method: "put",
  path: "/webhook/{webhookId}",
  operationId: "replaceWebhook",
  summary: "Replace a webhook's whole configuration",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: {
    params: WebhookIdParam,
    body: documentedJson(ReplaceWebhookInput, "The whole configuration; the path names the webhook"),
  },
  responses: {
    ...BODY_REFUSED,
    ...jsonOk("The webhook", WebhookView),
    ...ERROR_RESPONSES,
    ...notFound,
  },
});

const patchRoute = billedRoute({
  method: "patch",
  path: "/webhook/{webhookId}",
  operationId: "updateWebhook",
  summary: "Change some fields of a webhook",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: {
    params: WebhookIdParam,
    body: documentedJson(
      PatchWebhookInput,
      "Fields to change: maps replace whole, schedule merges field by field, schedule null makes a mailbox webhook",
    ),
  },
  responses: {
    ...BODY_REFUSED,
    ...jsonOk("The webhook", WebhookView),
    ...ERROR_RESPONSES,
    ...notFound,
  },
});

const deleteRoute = billedRoute({
  method: "delete",
  path: "/webhook/{webhookId}",
  operationId: "deleteWebhook",
  summary: "Delete a webhook",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { params: WebhookIdParam },
  responses: { ...textOk("`OK`"), ...ERROR_RESPONSES, ...notFound },
});

const testRoute = billedRoute({
  method: "post",
  path: "/webhook/{webhookId}/test",
  operationId: "testWebhook",
  summary: "Send a test payload once, synchronously",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { params: WebhookIdParam },
  responses: {
    ...jsonOk("The outcome, 200 also when delivery failed", TestResult),
    ...ERROR_RESPONSES,
    ...notFound,
  },
});

type Ctx = Context<AppEnv>;

export function webhookRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, createWebhookRoute, (c) => create(c));
  serve(app, listRoute, (c) => billed(c, webhookCalls.list({ walletId: c.get("walletId")! })));
  serve(app, deleteDefault, (c) => remove(c, DEFAULT_WEBHOOK_ID));
  serve(app, testDefault, (c) => testWebhook(c, DEFAULT_WEBHOOK_ID));
  serve(app, getRoute, (c) => show(c, c.req.valid("param").webhookId));
  serve(app, putRoute, (c) => replace(c, c.req.valid("param").webhookId));
  serve(app, patchRoute, (c) => patch(c, c.req.valid("param").webhookId));
  serve(app, deleteRoute, (c) => remove(c, c.req.valid("param").webhookId));
  serve(app, testRoute, (c) => testWebhook(c, c.req.valid("param").webhookId));
}

/** The settings of a create or replace body when they keep every rule, else the 400 phrase. */
function validSettings(c: Ctx, input: ReplaceWebhookInput): Parsed<WebhookSettings> {
  const settings = settingsFromInput(input);
  if (!settings.ok) return settings;
  const { config, clock } = c.get("services");
  return validateSettings(settings.value, { allowPrivate: config.allowPrivateWebhooks, now: clock.now() });
}

async function create(c: Ctx): Promise<Response> {
  const input = await readJsonBody(c, CreateWebhookInput);
  if (!input.ok) return billedFailure(c, 400, input.phrase);
  const settings = validSettings(c, input.value);
  if (!settings.ok) return billedFailure(c, 400, settings.phrase);
  const request = { webhookId: input.value.webhookId, settings: settings.value, fresh: freshIdentity(c) };
  return billed(c, webhookCalls.create({ walletId: c.get("walletId")!, ...request }));
}

async function replace(c: Ctx, webhookId: string): Promise<Response> {
  const input = await readJsonBody(c, ReplaceWebhookInput);
  if (!input.ok) return billedFailure(c, 400, input.phrase);
  const settings = validSettings(c, input.value);
  if (!settings.ok) return billedFailure(c, 400, settings.phrase);
  const request = { webhookId, settings: settings.value, fresh: freshIdentity(c) };
  return billed(c, webhookCalls.replace({ walletId: c.get("walletId")!, ...request }));
}

async function patch(c: Ctx, webhookId: string): Promise<Response> {
  const input = await readJsonBody(c, PatchWebhookInput);
  if (!input.ok) return billedFailure(c, 400, input.phrase);
  const allowPrivate = c.get("services").config.allowPrivateWebhooks;
  const request = { webhookId, patch: input.value, fresh: freshIdentity(c), allowPrivate };
  return billed(c, webhookCalls.patch({ walletId: c.get("walletId")!, ...request }));
}

function show(c: Ctx, webhookId: string): Promise<Response> {
  return billed(c, webhookCalls.get({ walletId: c.get("walletId")!, webhookId }));
}

function remove(c: Ctx, webhookId: string): Promise<Response> {
  return billed(c, webhookCalls.delete({ walletId: c.get("walletId")!, webhookId }));
}

function freshIdentity(c: Ctx) {
  return newWebhookIdentity(c.get("services").config.mailDomain);
}

/** The test is sent before the call is billed (see test_delivery.ts), then billed with its result. */
async function testWebhook(c: Ctx, webhookId: string): Promise<Response> {
  const walletId = c.get("walletId")!;
  const idempotencyKey = c.req.header("idempotency-key");
  const request = { walletId, webhookId, price: WEBHOOK.price, idempotencyKey };
  const sent = await sendTestDelivery(c.get("services"), request);
  if (sent === undefined) return billed(c, webhookCalls.testNotSent({ walletId, webhookId }));
  const result = { result: sent.answer, sent: { walletId, webhookId, record: sent.record } };
  return billed(c, webhookCalls.testSent(result));
}
