// A webhook's configuration as the log and the read model hold it (CONTRACT section 6): a mailbox
// webhook or a scheduled one, never both, plus what identifies it, and the formats a mailbox forwards
// in. Types only, beside the fold that keeps them (webhooks.ts); the registry's commands make them
// (src/webhooks/config/config.ts).

export const EMAIL_FORMATS = ["slack", "discord", "teams", "telegram", "pagerduty", "custom"] as const;
export type EmailFormat = typeof EMAIL_FORMATS[number];

/** How a mailbox webhook forwards the mail it receives. */
export interface MailboxSettings {
  /** None: the inbound email payload as is. */
  format?: EmailFormat;
  /** Only with format `custom`. */
  template?: Record<string, unknown>;
  options: Record<string, string>;
  includeAttachments: boolean;
}

/** When a scheduled webhook is called. */
export interface ScheduleSettings {
  cron: string;
  timezone: string;
  active: boolean;
}

/** What a client chooses: the target and one of the two modes. */
export type WebhookSettings =
  & { url: string; headers: Record<string, string> }
  & ({ mode: "mailbox"; mailbox: MailboxSettings } | { mode: "scheduled"; schedule: ScheduleSettings });

/** What the service assigns, kept for the webhook's life. */
export interface WebhookIdentity {
  webhookId: string;
  /** The Standard Webhooks signing key, `whsec_` + base64. */
  secret: string;
  /** Strictly increasing within a wallet: the order of `GET /webhook`. */
  createdAt: Date;
}

/**
 * A webhook's whole configuration. A mailbox webhook always has its address (`email`); a scheduled
 * one keeps the address it had, so it gets it back when it becomes a mailbox again.
 */
export type WebhookConfig =
  & WebhookIdentity
  & { url: string; headers: Record<string, string> }
  & (
    | { mode: "mailbox"; mailbox: MailboxSettings; email: string }
    | { mode: "scheduled"; schedule: ScheduleSettings; email?: string }
  );

export type MailboxWebhook = Extract<WebhookConfig, { mode: "mailbox" }>;
