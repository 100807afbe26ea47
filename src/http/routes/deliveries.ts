// The deliveries of a webhook (issue 13): GET /webhook/{webhookId}/deliveries,
// GET /webhook/{webhookId}/deliveries/{deliveryId}, POST .../{deliveryId}/retry and
// POST /webhook/{webhookId}/recover; 1 credit each, like the other webhook calls. The decisions are
// in webhooks/deliveries/commands.ts.
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { billed, billedFailure, billing } from "../billing.ts";
import { requireWallet } from "../middleware.ts";
import { webhookCalls } from "../../webhooks/calls.ts";
import { WEBHOOK } from "../../calls/prices.ts";
import { WebhookIdParam } from "../../webhooks/config/input.ts";
import {
  DEFAULT_PAGE,
  DeliveriesQuery,
  DeliveryPage,
  DeliveryParams,
  DeliveryView,
  DeliveryWithPayload,
  parseCursor,
  RecoverInput,
  RecoverResult,
} from "../../webhooks/deliveries/view.ts";
import {
  billedRoute,
  BILLING_NOTE,
  BODY_REFUSED,
  ERROR_RESPONSES,
  errorResponseDoc,
  jsonOk,
  RETRY_AFTER_HEADER,
  serve,
} from "../openapi.ts";
import { documentedJson, readJsonBody } from "../json_body.ts";
import { serverSecretFor } from "../../server_secret.ts";

const notFound = { 404: errorResponseDoc("`Webhook not found` or `Delivery not found`") };

const listRoute = billedRoute({
  method: "get",
  path: "/webhook/{webhookId}/deliveries",
  operationId: "listDeliveries",
  summary: "A webhook's deliveries, newest first (kept 7 days)",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { params: WebhookIdParam, query: DeliveriesQuery },
  responses: { ...jsonOk("A page of deliveries", DeliveryPage), ...ERROR_RESPONSES, ...notFound },
});

const showRoute = billedRoute({
  method: "get",
  path: "/webhook/{webhookId}/deliveries/{deliveryId}",
  operationId: "getDelivery",
  summary: "One delivery, with the body it was sent with or will be sent with",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { params: DeliveryParams },
  responses: {
    ...jsonOk("The delivery and its payload", DeliveryWithPayload),
    ...ERROR_RESPONSES,
    ...notFound,
  },
});

const retryRoute = billedRoute({
  method: "post",
  path: "/webhook/{webhookId}/deliveries/{deliveryId}/retry",
  operationId: "retryDelivery",
  summary: "Send a delivery once more now (same webhook-id, fresh signature)",
  description:
    "Works for failed, abandoned and delivered deliveries; a pending one's next attempt moves to " +
    "now; a paused webhook's goes out when it resumes. The email or run is not charged again. " +
    BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: { params: DeliveryParams },
  responses: {
    ...jsonOk("The delivery as queued", DeliveryView),
    ...ERROR_RESPONSES,
    ...notFound,
    409: errorResponseDoc("A test delivery is not sent again"),
  },
});

const recoverRoute = billedRoute({
  method: "post",
  path: "/webhook/{webhookId}/recover",
  operationId: "recoverDeliveries",
  summary: "Send again every failed or abandoned delivery created in a window (at most 7 days back)",
  description:
    "At most 500 a call, oldest first: call again for the next ones. Nothing is charged again but " +
    "the call. One recover that queues deliveries per webhook per `WEBHOOK_RECOVER_INTERVAL_MS` " +
    "(default 60 s): within it, `429` with `Retry-After`, charged like any refusal; one with " +
    'nothing to queue answers `{"queued": 0}` at any time. ' + BILLING_NOTE,
  middleware: [requireWallet, billing(WEBHOOK)] as const,
  request: {
    params: WebhookIdParam,
    body: documentedJson(RecoverInput, "The window: since, and until (default now)"),
  },
  responses: {
    ...BODY_REFUSED,
    ...jsonOk("How many were queued", RecoverResult),
    ...ERROR_RESPONSES,
    ...notFound,
    429: {
      ...errorResponseDoc("The webhook was recovered within the interval: `Too Many Requests: ...`"),
      headers: RETRY_AFTER_HEADER,
    },
  },
});

export function deliveryRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, listRoute, (c) => {
    const walletId = c.get("walletId")!;
    const { webhookId } = c.req.valid("param");
    const query = c.req.valid("query");
    const after = query.cursor === undefined ? undefined : parseCursor(query.cursor);
    if (after && !after.ok) return billedFailure(c, 400, after.phrase);
    const request = {
      walletId,
      webhookId,
      ...(query.status ? { status: query.status } : {}),
      limit: query.limit === undefined ? DEFAULT_PAGE : Number(query.limit),
      ...(after ? { after: after.value } : {}),
    };
    return billed(c, webhookCalls.deliveries(request));
  });
  serve(app, showRoute, async (c) => {
    const { sql, config } = c.get("services");
    // A payload not sent yet is shown with its attachment links signed as an attempt signs them.
    const signing = {
      serverSecret: await serverSecretFor(sql, config.serverSecret),
      publicUrl: config.publicUrl,
    };
    return billed(
      c,
      webhookCalls.delivery({ walletId: c.get("walletId")!, ...c.req.valid("param"), signing }),
    );
  });
  serve(app, retryRoute, (c) => {
    return billed(c, webhookCalls.retry({ walletId: c.get("walletId")!, ...c.req.valid("param") }));
  });
  serve(app, recoverRoute, async (c) => {
    const { webhookId } = c.req.valid("param");
    const input = await readJsonBody(c, RecoverInput);
    if (!input.ok) return billedFailure(c, 400, input.phrase);
    const request = { walletId: c.get("walletId")!, webhookId, ...input.value };
    const { clock, config } = c.get("services");
    const intervalMs = config.recoverIntervalMs;
    return billed(c, webhookCalls.recover({ request, now: clock.now(), intervalMs }));
  });
}
