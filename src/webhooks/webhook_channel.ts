// The channel of email and scheduled deliveries: the webhook as it is now, the body rendered in its
// format, one signed POST. A webhook deleted since the delivery was queued ends the delivery.
import type { Sql } from "../db/connect.ts";
import { findWebhook } from "../../projections/webhooks.ts";
import { type DeliveryChannel, renderFailure } from "./delivery_channel.ts";
import { signedPost } from "./deliver.ts";
import { type LinkSigning, renderDeliveryBody } from "./delivery_body.ts";

export interface WebhookChannelOptions {
  sql: Sql;
  signing: LinkSigning;
  allowPrivate: boolean;
}

export function webhookChannel(options: WebhookChannelOptions): DeliveryChannel {
  return {
    logPath: (delivery) => delivery.webhookId!,
    async send(delivery, at) {
      if (delivery.kind !== "email" && delivery.kind !== "scheduled") {
        throw new Error(`The webhook channel cannot send a delivery of kind "${delivery.kind}"`);
      }
      const webhook = await findWebhook(options.sql, delivery.walletId, delivery.webhookId);
      if (!webhook) return undefined;
      let body: string;
      try {
        body = renderDeliveryBody(webhook, { content: delivery, signing: options.signing, now: at });
      } catch (error) {
        return renderFailure(error);
      }
      const result = await signedPost(webhook, body, {
        messageId: delivery.messageId,
        now: at,
        allowPrivate: options.allowPrivate,
      });
      return { ...result, sentBody: body };
    },
  };
}
