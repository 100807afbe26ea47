// How each kind of delivery is sent: webhook deliveries (emails, scheduled runs) and low-balance
// alerts. The one place that knows both, so the delivery worker needs neither.
import type { Sql } from "./db/connect.ts";
import type { DeliveryChannels } from "./webhooks/delivery_channel.ts";
import type { LinkSigning } from "./webhooks/deliver.ts";
import { webhookChannel } from "./webhooks/webhook_channel.ts";
import { alertChannel } from "./alerts/channel.ts";
import { type AlertMailer, createAlertMailer } from "./alerts/mailer.ts";

export interface ChannelOptions {
  sql: Sql;
  signing: LinkSigning;
  allowPrivate: boolean;
  /** Sends alert emails; without one they are recorded as not sent. */
  mailer?: AlertMailer;
}

export function deliveryChannels(options: ChannelOptions): DeliveryChannels {
  const webhooks = webhookChannel(options);
  const alerts = alertChannel({ ...options, mailer: options.mailer ?? createAlertMailer(undefined, "") });
  return { email: webhooks, scheduled: webhooks, alert_webhook: alerts, alert_email: alerts };
}
