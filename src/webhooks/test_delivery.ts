// The synchronous test delivery of POST /webhook/<id>/test (CONTRACT section 6): the test payload
// for the webhook's mode, rendered, signed and POSTed once, exactly as a real delivery would be.
// It runs before the call is billed: the ledger's transaction holds the wallet's lock, which must not
// wait up to 10 s on a stranger's server. So the call is checked first (webhook, credits, a replayed
// Idempotency-Key), to POST only when the ledger will serve it, and billed after with the outcome,
// which the delivery history keeps as a finished delivery of kind `test` (TestRecord).
import { z } from "@hono/zod-openapi";
import type { Sql } from "../db/connect.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { findActiveWallet } from "../../projections/wallets.ts";
import { findWebhook } from "../../projections/webhooks.ts";
import { findIdempotentReply } from "../../projections/idempotent_replies.ts";
import { linkSigning, signedPost } from "./deliver.ts";
import { renderDeliveryBody } from "./delivery_body.ts";
import { testDelivery } from "./test_payload.ts";
import type { WebhookConfig } from "./config/config.ts";
import { randomId, randomLowerId } from "../ids.ts";
import { newDeliveryId } from "./outbox.ts";
import { describeError } from "../log.ts";

/** Characters of a render failure's reason kept in the answer. */
const MAX_REASON_CHARS = 200;

export const TestResult = z.strictObject({ success: z.boolean(), message: z.string() })
  .openapi("WebhookTestResult");
export type TestResult = z.infer<typeof TestResult>;

/** What the delivery history keeps of a test send. */
export interface TestRecord {
  deliveryId: string;
  /** `test_` + random: the `webhook-id` header sent. */
  messageId: string;
  at: Date;
  ok: boolean;
  status?: number;
  error?: string;
  latencyMs: number;
  sentBody?: string;
  excerpt?: string;
}

export interface SentTest {
  answer: TestResult;
  record: TestRecord;
}

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
): Promise<SentTest | undefined> {
  const { sql, clock } = deps;
  const { walletId, webhookId, idempotencyKey } = request;
  const [wallet, webhook, prior] = await Promise.all([
    findActiveWallet(sql, walletId),
    findWebhook(sql, walletId, webhookId),
    idempotencyKey === undefined
      ? undefined
      : findIdempotentReply(sql, { walletId, key: idempotencyKey, now: clock.now() }),
  ]);
  if (!webhook || !wallet || wallet.balance < request.price || prior) return undefined;
  return await postTestPayload(deps, walletId, webhook);
}

async function postTestPayload(
  deps: TestDeliveryDeps,
  walletId: string,
  webhook: WebhookConfig,
): Promise<SentTest> {
  const { sql, config } = deps;
  const now = deps.clock.now();
  const ids = { deliveryId: newDeliveryId(), messageId: `test_${randomId(24)}`, at: now };
  try {
    const content = testDelivery(webhook, {
      hash: walletId,
      mailDomain: config.mailDomain,
      now,
      nonce: randomLowerId(16),
    });
    const body = renderDeliveryBody(webhook, { content, signing: await linkSigning(sql, config), now });
    const result = await signedPost(webhook, body, {
      messageId: ids.messageId,
      now,
      allowPrivate: config.allowPrivateWebhooks,
    });
    const record: TestRecord = {
      ...ids,
      ok: result.ok,
      ...(result.status !== undefined ? { status: result.status } : {}),
      ...(result.ok ? {} : { error: result.error }),
      latencyMs: result.latencyMs,
      sentBody: body,
      ...(result.excerpt !== undefined ? { excerpt: result.excerpt } : {}),
    };
    return result.ok
      ? { answer: { success: true, message: "test webhook delivered" }, record }
      : { answer: { success: false, message: `webhook call failed: ${result.error}` }, record };
  } catch (error) {
    const reason = `cannot render payload: ${describeError(error).slice(0, MAX_REASON_CHARS)}`;
    return {
      answer: { success: false, message: `webhook call failed: ${reason}` },
      record: { ...ids, ok: false, error: reason, latencyMs: 0 },
    };
  }
}
