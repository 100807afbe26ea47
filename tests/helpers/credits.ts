// Buys credits the way the payment provider confirms a checkout (CONTRACT section 4), for tests
// that spend more than the 100 welcome credits. The service needs PAYMENT_WEBHOOK_SECRET.
import { call } from "./client.ts";
import type { Service } from "./service.ts";
import { signStripePayload } from "../../src/payments/stripe_signature.ts";

export const TEST_PAYMENT_SECRET = "whsec_test_payment_secret";

/** Adds 1,000,000 credits to the token's wallet. */
export async function buyCredits(service: Service, token: string): Promise<void> {
  const event = JSON.stringify({
    id: `evt_${crypto.randomUUID()}`,
    type: "checkout.session.completed",
    data: { object: { client_reference_id: token, payment_status: "paid", metadata: { tier: "1" } } },
  });
  const answer = await call(service, "POST", "/payments/webhook", {
    body: event,
    headers: {
      "content-type": "application/json",
      "stripe-signature": await signStripePayload(event, TEST_PAYMENT_SECRET, new Date()),
    },
  });
  if (answer.status !== 200) throw new Error(`Payment answered ${answer.status}: ${answer.text}`);
}
