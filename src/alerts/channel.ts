// The channel of alerts (low balance, endpoint health): the wallet's alert settings as they are now name the target;
// a webhook alert is rendered in its format and POSTed signed with the wallet's alert key, an email
// alert goes through the SMTP relay. Settings removed since the alert was queued end the delivery.
import type { Sql } from "../db/connect.ts";
import { findWalletSettings } from "../../projections/wallet_settings.ts";
import type { DeliveryChannel } from "../webhooks/delivery_channel.ts";
import { signedPost } from "../webhooks/deliver.ts";
import type { EmailFormat } from "../webhooks/payloads.ts";
import {
  ALERT_EMAIL_PATH,
  ALERT_WEBHOOK_PATH,
  HEALTH_ALERT_EMAIL_PATH,
  HEALTH_ALERT_WEBHOOK_PATH,
  isEndpointAlert,
  parseAlert,
  renderAlert,
} from "./format.ts";
import type { AlertMailer } from "./mailer.ts";
import { describeError } from "../log.ts";

export interface AlertChannelOptions {
  sql: Sql;
  mailer: AlertMailer;
  allowPrivate: boolean;
}

export function alertChannel(options: AlertChannelOptions): DeliveryChannel {
  return {
    logPath(delivery) {
      const endpoint = isEndpointAlert(delivery.payload);
      if (delivery.kind === "alert_email") return endpoint ? HEALTH_ALERT_EMAIL_PATH : ALERT_EMAIL_PATH;
      return endpoint ? HEALTH_ALERT_WEBHOOK_PATH : ALERT_WEBHOOK_PATH;
    },
    async send(delivery, at) {
      const alert = parseAlert(delivery.payload);
      const settings = await findWalletSettings(options.sql, delivery.walletId);
      if (delivery.kind === "alert_email") {
        const to = settings?.low_balance_email;
        return to ? await options.mailer.send(to, alert) : undefined;
      }
      const webhook = settings?.low_balance_webhook;
      if (!settings || !webhook) return undefined;
      let body: string;
      try {
        const format = { ...webhook, format: (webhook.format || undefined) as EmailFormat | undefined };
        body = JSON.stringify(renderAlert(alert, format, at));
      } catch (error) {
        return {
          ok: false,
          latencyMs: 0,
          retryable: false,
          error: `cannot render payload: ${describeError(error)}`,
        };
      }
      const result = await signedPost(
        { url: webhook.url, headers: webhook.headers, secret: settings.alert_secret },
        body,
        {
          messageId: delivery.messageId,
          now: at,
          allowPrivate: options.allowPrivate,
        },
      );
      return { ...result, sentBody: body };
    },
  };
}
