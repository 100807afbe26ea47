// POST /payments/webhook: the payment provider confirms a checkout (CONTRACT section 4).
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";
import { BODY_REFUSED, errorResponseDoc, publicRoute, textOk } from "../openapi.ts";
import { parseWith, unstorablePhrase } from "../../parsed.ts";
import { readTextBody } from "../body.ts";
import { verifyStripeSignature } from "../../payments/stripe_signature.ts";
import { creditPurchase, type Tier } from "../../payments/purchase.ts";
import { sha256Hex } from "../../ids.ts";

const MAX_BODY_BYTES = 256 * 1024;

export const CheckoutEvent = z.object({
  id: z.string().min(1).max(255),
  type: z.string(),
  data: z.object({
    object: z.object({
      client_reference_id: z.string().nullish(),
      payment_status: z.string().nullish(),
      payment_link: z.string().nullish(),
      metadata: z.object({ tier: z.string().optional() }).passthrough().nullish(),
    }).passthrough(),
  }).passthrough(),
}).passthrough().openapi("CheckoutEvent");

const paymentWebhook = publicRoute({
  method: "post",
  path: "/payments/webhook",
  operationId: "receivePayment",
  summary: "Payment confirmation from the payment provider",
  description: 'Signed with `Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`; ' +
    "`checkout.session.completed` with `client_reference_id` = token adds the tier's credits once per event id.",
  request: {
    headers: z.object({
      "stripe-signature": z.string().openapi({
        description: 'The provider\'s signature: `t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`',
        example: "t=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd",
      }),
    }),
    body: { content: { "application/json": { schema: CheckoutEvent } } },
  },
  responses: {
    ...BODY_REFUSED,
    ...textOk("`OK` (also for a replayed or ignored event)"),
    400: errorResponseDoc("Bad or stale signature, malformed body, unknown token or tier"),
    503: errorResponseDoc("Payments are not configured"),
  },
});

/** The tier from `metadata.tier`, or from the payment link when it is one of the configured links. */
function tierOf(
  object: z.infer<typeof CheckoutEvent>["data"]["object"],
  links: Record<Tier, string>,
): Tier | null {
  const tier = object.metadata?.tier;
  if (tier === "1" || tier === "3") return tier;
  const link = object.payment_link;
  if (!link) return null;
  for (const [name, url] of Object.entries(links) as [Tier, string][]) {
    if (link === url || link === new URL(url).pathname.split("/").pop()) return name;
  }
  return null;
}

export function paymentRoutes(app: OpenAPIHono<AppEnv>) {
  // Documented from the schema but validated by hand: the signature is checked on the raw body
  // before anything is parsed, and a switched-off endpoint answers before validation.
  app.openAPIRegistry.registerPath(paymentWebhook);
  app.post(paymentWebhook.path, async (c) => {
    const { config, clock } = c.get("services");
    if (!config.paymentWebhookSecret) return errorResponse(c, 503, "Payments are not configured");
    const body = await readTextBody(c, MAX_BODY_BYTES);
    const problem = await verifyStripeSignature(
      c.req.header("stripe-signature") ?? null,
      body,
      { secret: config.paymentWebhookSecret, now: clock.now() },
    );
    if (problem) return errorResponse(c, 400, problem);
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      return errorResponse(c, 400, "Invalid body: not JSON");
    }
    const parsed = parseWith(CheckoutEvent, json, "body");
    if (!parsed.ok) return errorResponse(c, 400, parsed.phrase);
    const event = parsed.value;
    // Other event types are acknowledged so the provider stops sending them.
    if (event.type !== "checkout.session.completed") return c.text("OK", 200);
    const session = event.data.object;
    if (session.payment_status && session.payment_status !== "paid") return c.text("OK", 200);
    const token = session.client_reference_id?.trim();
    if (!token) return errorResponse(c, 400, "Invalid client_reference_id: missing");
    const tier = tierOf(session, config.rechargeLinks);
    if (!tier) return errorResponse(c, 400, "Invalid metadata.tier: must be 1 or 3");
    // The event id is what the ledger keeps and looks up; the rest of a signed event is read, not
    // stored, so odd text elsewhere in it (a customer's name) must not stop a payment.
    const unstorable = unstorablePhrase(event.id, "body.id");
    if (unstorable) return errorResponse(c, 400, unstorable);
    const outcome = await creditPurchase(c.get("services").ledger, {
      walletId: await sha256Hex(token),
      tier,
      paymentId: event.id,
    });
    if (outcome === "unknown wallet") {
      return errorResponse(c, 400, "Invalid client_reference_id: unknown token");
    }
    return c.text("OK", 200);
  });
}
