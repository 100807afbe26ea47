// Wallets for a load: one token per client, each from its own client address (the service must
// trust X-Forwarded-For) and funded through a signed payment, so no client runs out of credits.
import { signStripePayload } from "../../payments/stripe_signature.ts";
import { balanceOf } from "./verify.ts";

export interface FundedWallets {
  tokens: string[];
  /** Each wallet's balance after the GET /token that read it. */
  balances: number[];
}

export async function fundedWallets(
  baseUrl: string,
  count: number,
  paymentSecret: string,
): Promise<FundedWallets> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${baseUrl}/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "x-forwarded-for": `203.0.113.${(i % 250) + 1}`,
      },
      body: "token=new",
    });
    const token = await res.text();
    if (res.status !== 200) throw new Error(`POST /token answered ${res.status}: ${token}`);
    await buyCredits(baseUrl, token, paymentSecret);
    tokens.push(token);
  }
  const balances = [];
  for (const token of tokens) balances.push(await balanceOf(baseUrl, token));
  return { tokens, balances };
}

/** Adds a tier-1 purchase (1,000,000 credits) the way the payment provider confirms one. */
async function buyCredits(baseUrl: string, token: string, secret: string) {
  const event = JSON.stringify({
    id: `evt_${crypto.randomUUID()}`,
    type: "checkout.session.completed",
    data: { object: { client_reference_id: token, payment_status: "paid", metadata: { tier: "1" } } },
  });
  const res = await fetch(`${baseUrl}/payments/webhook`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "stripe-signature": await signStripePayload(event, secret, new Date()),
    },
    body: event,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`Payment answered ${res.status}: ${text}`);
}
