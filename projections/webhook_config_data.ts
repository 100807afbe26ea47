// The one conversion between a webhook's configuration and the payload of WebhookCreated and
// WebhookUpdated as the log stores it: flat, mailbox fields absent on a scheduled webhook, `schedule`
// absent on a mailbox one. Written events never change meaning, so the payload keeps its shape.
import type { EventData } from "../events/catalogue.ts";
import type { EmailFormat, WebhookConfig } from "./webhook_config.ts";

export type WebhookConfigData = EventData<"WebhookCreated">;

/** The payload of the event that leaves `config`. */
export function eventDataOf(config: WebhookConfig): WebhookConfigData {
  const identity = { webhookId: config.webhookId, url: config.url, headers: config.headers };
  const kept = { ...(config.email ? { email: config.email } : {}), secret: config.secret };
  const createdAt = config.createdAt.toISOString();
  if (config.mode === "scheduled") return { ...identity, schedule: config.schedule, ...kept, createdAt };
  const { format, template, options, includeAttachments } = config.mailbox;
  return {
    ...identity,
    ...(format ? { format } : {}),
    ...(template !== undefined ? { template } : {}),
    options,
    includeAttachments,
    ...kept,
    createdAt,
  };
}

/** The configuration an event's payload describes. */
export function configFromEvent(data: WebhookConfigData): WebhookConfig {
  const common = {
    webhookId: data.webhookId,
    url: data.url,
    headers: data.headers,
    secret: data.secret,
    createdAt: new Date(data.createdAt),
  };
  if (data.schedule) {
    const { cron, timezone, active } = data.schedule;
    const email = data.email ? { email: data.email } : {};
    return { ...common, mode: "scheduled", schedule: { cron, timezone, active }, ...email };
  }
  return {
    ...common,
    mode: "mailbox",
    mailbox: {
      ...(data.format ? { format: data.format as EmailFormat } : {}),
      ...(data.template ? { template: data.template } : {}),
      options: data.options ?? {},
      includeAttachments: data.includeAttachments ?? true,
    },
    email: mailboxAddress(data.webhookId, data.email),
  };
}

/** A mailbox webhook has an address from its creation on: one without is a bug, never defaulted. */
export function mailboxAddress(webhookId: string, email: string | null | undefined): string {
  if (!email) throw new Error(`Mailbox webhook "${webhookId}" has no address`);
  return email;
}
