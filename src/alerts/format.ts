// The body of a low-balance alert: the raw payload, a custom template filled from it, or the chat
// formats of mailbox webhooks, fed a short notice written as an email.
import type { EmailPayload, FormatSettings } from "../webhooks/payloads.ts";
import { renderEmail } from "../webhooks/formats/mod.ts";
import { renderTemplate } from "../webhooks/formats/custom_template.ts";
import { SERVICE_NAME } from "../service_info.ts";
import type { LowBalancePayload } from "./low_balance.ts";

/** How the call log names the alert targets: attempts of alert deliveries have these paths. */
export const ALERT_WEBHOOK_PATH = "@low-balance";
export const ALERT_EMAIL_PATH = "@low-balance-email";

export function alertSubject(alert: LowBalancePayload): string {
  return `Low balance: ${alert.wallet} credits left`;
}

export function alertText(alert: LowBalancePayload): string {
  return `The balance of wallet ${alert.token_hash} is ${alert.wallet} credits, below your alert threshold ` +
    `of ${alert.threshold}. Recharge to keep your calls served.`;
}

export function renderAlert(alert: LowBalancePayload, settings: FormatSettings, now: Date): unknown {
  if (!settings.format) return alert;
  if (settings.format === "custom") return renderTemplate(settings.template ?? {}, { ...alert });
  const notice: EmailPayload = {
    externalMessageId: `low-balance-${alert.token_hash.slice(0, 16)}-${alert.threshold}`,
    receivedAt: now.toISOString(),
    from: { email: "", name: SERVICE_NAME },
    to: { hash: alert.token_hash },
    webhookId: ALERT_WEBHOOK_PATH,
    recipient: "",
    cc: [],
    subject: alertSubject(alert),
    text: alertText(alert),
    html: "",
    attachments: [],
  };
  return renderEmail(notice, settings);
}
