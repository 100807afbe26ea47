// How the delivery worker sends one kind of delivery: a channel finds the target, renders the body
// and sends it once, answering a neutral AttemptResult whatever the transport (an HTTP POST, or a
// mail through the relay, whose reply code is then the status).
import type { PostResult } from "./http_post.ts";
import type { ClaimedDelivery, DeliveryKind } from "./outbox.ts";
import { describeError } from "../log.ts";

/**
 * A receiver's answer to one send: `status` is its reply code, when it answered; `sentBody` the
 * JSON body sent, when one was.
 */
export type AttemptResult = PostResult & { sentBody?: string };

export interface DeliveryChannel {
  /** One send; undefined when the target no longer exists (the delivery is given up). */
  send(delivery: ClaimedDelivery, at: Date): Promise<AttemptResult | undefined>;
  /** What the call log shows as the path of an attempt: the webhookId, or the alert's channel. */
  logPath(delivery: ClaimedDelivery): string;
}

export type DeliveryChannels = Record<DeliveryKind, DeliveryChannel>;

/** The answer when a body cannot be rendered: nothing was sent, and a retry would not render it either. */
export function renderFailure(error: unknown): AttemptResult {
  return {
    ok: false,
    latencyMs: 0,
    retryable: false,
    error: `cannot render payload: ${describeError(error)}`,
  };
}
