// What the chat formats (Slack, Discord, Teams, Telegram, PagerDuty) show: a message with a sender,
// a subject and plain text. An inbound email maps to one (formats/mod.ts), and so does an alert of
// the service (alerts/format.ts), so neither has to pass for the other.
import type { Address, AttachmentLink } from "../payloads.ts";

export interface ChatMessage {
  /** What PagerDuty deduplicates on (an email's Message-ID); "" leaves it to PagerDuty. */
  id: string;
  /** When it happened, ISO 8601; "" leaves it to PagerDuty. */
  at: string;
  from: Address;
  subject: string;
  /** The plain text shown under the subject. */
  text: string;
  /** Files linked from the message (Teams lists them). */
  attachments: AttachmentLink[];
}
