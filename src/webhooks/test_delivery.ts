// The synchronous test delivery of POST /webhook/<id>/test (CONTRACT section 6): the test payload
// for the webhook's mode, rendered, signed and POSTed once, exactly as a real delivery would be.
// It runs before the call is billed: the ledger's transaction holds the wallet's lock, which must not
// wait up to 10 s on a stranger's server. So the call is checked first (webhook, credits, a replayed
// Idempotency-Key), to POST only when the ledger will serve it, and billed after with the outcome.
import { z } from "@hono/zod-openapi";
import type { Sql } from "../db/connect.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { findActiveWallet } from "../../projections/wallets.ts";
import { findWebhook } from "../../projections/webhooks.ts";
import { findIdempotentReply } from "../../projections/idempotent_replies.ts";
import { linkSigning, renderDeliveryBody, signedPost } from "./deliver.ts";
import { testDelivery } from "./test_payload.ts";
import type { WebhookConfig } from "./config/config.ts";
import { randomId, randomLowerId } from "../ids.ts";
import { describeError } from "../log.ts";

/** Characters of a render failure's reason kept in the answer. */
const MAX_REASON_CHARS = 200;

export const TestResult = z.strictObject({ success: z.boolean(), message: z.string() })
  .openapi("WebhookTestResult");
export type TestResult = z.infer<typeof TestResult>;

export interface TestDeliveryDeps {
  sql: Sql;
  config: Config;
  clock: Clock;
}

export interface TestDeliveryRequest {
  walletId: string;
  webhookId: string;
  /** What the call costs: a wallet below it gets its 402 from the ledger, with nothing sent. */
  price: number;
  idempotencyKey?: string;
}

/** Sends the test and tells how it went; undefined when nothing was sent because the ledger answers. */
export async function sendTestDelivery(
  deps: TestDeliveryDeps,
  request: TestDeliveryRequest,
): Promise<TestResult | undefined> {
  const { sql, clock } = deps;
  const { walletId, webhookId, idempotencyKey } = request;
  const [wallet, webhook, prior] = await Promise.all([
    findActiveWallet(sql, walletId),
    findWebhook(sql, walletId, webhookId),
    idempotencyKey === undefined
      ? undefined
      : findIdempotentReply(sql, walletId, idempotencyKey, clock.now()),
  ]);
  if (!webhook || !wallet || wallet.balance < request.price || prior) return undefined;
  return await postTestPayload(deps, walletId, webhook);
}

async function postTestPayload(deps: TestDeliveryDeps, walletId: string, webhook: WebhookConfig) {
  const { sql, config } = deps;
  const now = deps.clock.now();
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
    return result.ok
      ? { success: true, message: "test webhook delivered" }
      : { success: false, message: `webhook call failed: ${result.error}` };
  } catch (error) {
    const reason = describeError(error).slice(0, MAX_REASON_CHARS);
    return { success: false, message: `webhook call failed: cannot render payload: ${reason}` };
  }
}
