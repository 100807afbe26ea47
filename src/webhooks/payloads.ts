// Shapes of the JSON bodies the service POSTs to webhook URLs (CONTRACT sections 6, 9 and 10).
import type { AttachmentLink } from "../attachments/signed_link.ts";

export type { AttachmentLink };

export interface Address {
  email: string;
  name: string;
}

/** The raw inbound email payload: what a mailbox webhook without `format` receives. */
export interface EmailPayload {
  externalMessageId: string;
  receivedAt: string;
  from: Address;
  to: { hash: string };
  webhookId: string;
  recipient: string;
  cc: Address[];
  subject: string;
  text: string;
  html: string;
  attachments: AttachmentLink[];
}

/** The body of a scheduled run (CONTRACT section 10). */
export interface ScheduledRunPayload {
  type: "scheduled_webhook_run";
  webhookId: string;
  scheduledFor: string;
  executedAt: string;
  walletHash: string;
}

import type { EmailFormat } from "../../projections/webhook_config.ts";
export { EMAIL_FORMATS, type EmailFormat } from "../../projections/webhook_config.ts";

/** What a format needs to know about the webhook it renders for. */
export interface FormatSettings {
  format?: EmailFormat | "";
  template?: Record<string, unknown>;
  options?: Record<string, string>;
}
