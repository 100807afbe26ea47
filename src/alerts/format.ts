// The body of an alert: the raw payload, a custom template filled from it, or a chat message from
// the service (its subject and text) in one of the chat formats mailbox webhooks use. Low-balance
// alerts and endpoint-health alerts (webhooks/endpoint_alert.ts) alike.
import {
  type ChatMessage,
  EndpointAlertPayload,
  type FormatSettings,
  renderChat,
  renderTemplate,
} from "../webhooks/mod.ts";
import { SERVICE_NAME } from "../service_info.ts";
import { LowBalancePayload } from "./low_balance.ts";

/** How the call log names the alert targets: attempts of alert deliveries have these paths. */
export const ALERT_WEBHOOK_PATH = "@low-balance";
export const ALERT_EMAIL_PATH = "@low-balance-email";
export const HEALTH_ALERT_WEBHOOK_PATH = "@webhook-alert";
export const HEALTH_ALERT_EMAIL_PATH = "@webhook-alert-email";

/** A queued alert: an endpoint alert names its type; a low-balance alert (the older shape) does not. */
export type AlertPayload =
  | { kind: "low balance"; payload: LowBalancePayload }
  | { kind: "endpoint"; payload: EndpointAlertPayload };

export function isEndpointAlert(payload: unknown): boolean {
  return EndpointAlertPayload.safeParse(payload).success;
}

export function parseAlert(payload: unknown): AlertPayload {
  const endpoint = EndpointAlertPayload.safeParse(payload);
  if (endpoint.success) return { kind: "endpoint", payload: endpoint.data };
  return { kind: "low balance", payload: LowBalancePayload.parse(payload) };
}

export function alertSubject(alert: AlertPayload): string {
  if (alert.kind === "endpoint") return alert.payload.subject;
  return `Low balance: ${alert.payload.wallet} credits left`;
}

export function alertText(alert: AlertPayload): string {
  if (alert.kind === "endpoint") return alert.payload.text;
  const { token_hash, wallet, threshold } = alert.payload;
  return `The balance of wallet ${token_hash} is ${wallet} credits, below your alert threshold ` +
    `of ${threshold}. Recharge to keep your calls served.`;
}

/** What PagerDuty deduplicates on: one incident per wallet and threshold, or per webhook and alert type. */
function noticeId(alert: AlertPayload): string {
  if (alert.kind === "endpoint") return `${alert.payload.type}-${alert.payload.webhookId}`;
  return `low-balance-${alert.payload.token_hash.slice(0, 16)}-${alert.payload.threshold}`;
}

export function renderAlert(alert: AlertPayload, settings: FormatSettings, now: Date): unknown {
  if (!settings.format) return alert.payload;
  if (settings.format === "custom") return renderTemplate(settings.template ?? {}, { ...alert.payload });
  return renderChat(alertMessage(alert, now), settings.format, settings.options ?? {});
}

/** An alert as the chat formats show it: a message from the service, sent `now`. */
function alertMessage(alert: AlertPayload, now: Date): ChatMessage {
  return {
    id: noticeId(alert),
    at: now.toISOString(),
    from: { email: "", name: SERVICE_NAME },
    subject: alertSubject(alert),
    text: alertText(alert),
    attachments: [],
  };
}
