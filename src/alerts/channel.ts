// The channel of alerts (low balance, endpoint health): the wallet's alert settings as they are now name the target;
// a webhook alert is rendered in its format and POSTed signed with the wallet's alert key, an email
// alert goes through the SMTP relay, only to a confirmed address. Settings removed since the alert was
// queued end the delivery. The confirmation mail of an address (email_confirmation.ts) goes here too.
import type { Sql } from "../db/connect.ts";
import { findWalletSettings } from "../../projections/wallet_settings.ts";
import { type AttemptResult, type DeliveryChannel, renderFailure } from "../webhooks/delivery_channel.ts";
import type { ClaimedDelivery } from "../webhooks/outbox.ts";
import { type LinkSigning, signedPost } from "../webhooks/deliver.ts";
import type { EmailFormat } from "../webhooks/payloads.ts";
import {
  ALERT_EMAIL_PATH,
  ALERT_WEBHOOK_PATH,
  alertSubject,
  alertText,
  HEALTH_ALERT_EMAIL_PATH,
  HEALTH_ALERT_WEBHOOK_PATH,
  isEndpointAlert,
  parseAlert,
  renderAlert,
} from "./format.ts";
import type { AlertMailer } from "./mailer.ts";
import {
  CONFIRM_PATH,
  CONFIRMATION_EMAIL_PATH,
  confirmationMail,
  ConfirmationPayload,
  emailLinkToken,
  pendingLink,
} from "./email_confirmation.ts";

export interface AlertChannelOptions {
  sql: Sql;
  mailer: AlertMailer;
  allowPrivate: boolean;
  /** The server secret the confirmation links are made with, and the service's public address. */
  signing: LinkSigning;
}

export function alertChannel(options: AlertChannelOptions): DeliveryChannel {
  return {
    logPath(delivery) {
      if (ConfirmationPayload.safeParse(delivery.payload).success) return CONFIRMATION_EMAIL_PATH;
      const endpoint = isEndpointAlert(delivery.payload);
      if (delivery.kind === "alert_email") return endpoint ? HEALTH_ALERT_EMAIL_PATH : ALERT_EMAIL_PATH;
      return endpoint ? HEALTH_ALERT_WEBHOOK_PATH : ALERT_WEBHOOK_PATH;
    },
    async send(delivery, at) {
      const confirmation = ConfirmationPayload.safeParse(delivery.payload);
      if (confirmation.success) return await sendConfirmation(options, delivery, confirmation.data, at);
      const alert = parseAlert(delivery.payload);
      const settings = await findWalletSettings(options.sql, delivery.walletId);
      if (delivery.kind === "alert_email") {
        // The address as it is now, and only once confirmed: one changed since the alert was queued
        // gets nothing.
        const to = settings?.low_balance_email_confirmed ? settings.low_balance_email : null;
        return to
          ? await options.mailer.send(to, { subject: alertSubject(alert), text: alertText(alert) })
          : undefined;
      }
      const webhook = settings?.low_balance_webhook;
      if (!settings || !webhook) return undefined;
      let body: string;
      try {
        const format = { ...webhook, format: (webhook.format || undefined) as EmailFormat | undefined };
        body = JSON.stringify(renderAlert(alert, format, at));
      } catch (error) {
        return renderFailure(error);
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

/** The link mail, while its link is still the settings' pending one; else the delivery ends. */
async function sendConfirmation(
  options: AlertChannelOptions,
  delivery: ClaimedDelivery,
  payload: ConfirmationPayload,
  at: Date,
): Promise<AttemptResult | undefined> {
  const settings = await findWalletSettings(options.sql, delivery.walletId);
  const pending = pendingLink(settings, at);
  if (!pending || pending.linkId !== payload.confirmation.linkId) return undefined;
  const walletId = delivery.walletId;
  const token = await emailLinkToken(options.signing.serverSecret, { walletId, ...pending });
  const link = `${options.signing.publicUrl}${CONFIRM_PATH}?wallet=${walletId}&token=${token}`;
  return await options.mailer.send(pending.email, confirmationMail(link, pending.email));
}
