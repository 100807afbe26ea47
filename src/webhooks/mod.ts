// The face of webhooks: everything outside this folder reaches it through this file. Two parts
// live here, the webhook registry (what a webhook is, its settings and rules, its calls and views)
// and the delivery engine (the outbox, the worker and its channels, the payload formats, endpoint
// health and retention). The files behind it are free to change as long as these names keep their
// meaning; `deno task layout` lists the folder's entry points.

// The registry: settings, their rules and views, and the billed calls of /webhook.
export {
  CreateWebhookInput,
  DEFAULT_WEBHOOK_ID,
  Format,
  HeaderMap,
  MAX_HEADERS,
  MAX_OPTION_CHARS,
  MAX_OPTIONS,
  OptionMap,
  PatchWebhookInput,
  ReplaceWebhookInput,
  Template,
  Url,
  WebhookIdParam,
} from "./config/input.ts";
export {
  type MailboxWebhook,
  settingsFromInput,
  type WebhookConfig,
  type WebhookSettings,
} from "./config/config.ts";
export { MAILBOX_RULES, MAILBOX_RULES_SCHEMA, mailboxProblem } from "./config/mailbox_rules.ts";
export { validateSettings } from "./config/rules.ts";
export { newWebhookIdentity } from "./config/fresh_identity.ts";
export { WebhookList, WebhookView } from "./config/view.ts";
export { checkWebhookUrl, MAX_WEBHOOK_URL_LENGTH } from "./url_safety.ts";
export { newWebhookSecret } from "./signature.ts";
export { redactHeaders, redactOptions } from "./redaction.ts";
export { webhookCalls } from "./calls.ts";
export { sendTestDelivery, TestResult } from "./test_delivery.ts";
export {
  DEFAULT_PAGE,
  DeliveriesQuery,
  DeliveryPage,
  DeliveryParams,
  DeliveryView,
  DeliveryWithPayload,
  parseCursor,
  RecoverInput,
  RecoverResult,
} from "./deliveries/view.ts";

// The delivery engine: queueing into the outbox, the effects the ledger applies, the worker and its
// channels, endpoint health, and how long deliveries are kept.
export {
  type ClaimedDelivery,
  type NewDelivery,
  newDeliveryId,
  newMessageId,
  queueDeliveries,
  type QueueDelivery,
  queueDelivery,
  type QueuedEmail,
} from "./outbox.ts";
export {
  completeDeliveries,
  type CompleteDelivery,
  type HoldWebhookDeliveries,
  holdWebhookDeliveries,
  keepTestDeliveries,
  type KeepTestDelivery,
  requeueDeliveries,
  type RequeueDelivery,
  rescheduleDeliveries,
  type RescheduleDelivery,
} from "./outbox_effects.ts";
export { startDeliveryWorker } from "./delivery_worker.ts";
export { readOutbox } from "./outbox_gauges.ts";
export {
  type AttemptResult,
  type DeliveryChannel,
  type DeliveryChannels,
  renderFailure,
} from "./delivery_channel.ts";
export { type LinkSigning, linkSigning, signedPost } from "./deliver.ts";
export { webhookChannel } from "./webhook_channel.ts";
export {
  type AlertIds,
  DEFAULT_HEALTH_RULES,
  healthAfterFailure,
  type HealthRules,
} from "./endpoint_health.ts";
export { EndpointAlertPayload } from "./endpoint_alert.ts";
export { prepareDeliveryPartitions, sweepExpiredDeliveries } from "./retention.ts";

// What is delivered: the payloads and the formats that render them (alerts render through them too).
export type { EmailFormat, FormatSettings, ScheduledRunPayload } from "./payloads.ts";
export { type ChatMessage, renderChat } from "./formats/mod.ts";
export { renderTemplate } from "./formats/custom_template.ts";
