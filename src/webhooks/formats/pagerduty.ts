// The PagerDuty Events API v2 trigger for a chat message, an inbound email or an alert
// (CONTRACT section 7, notes/webhooks.md section 3.5).

import { cut, oneLine } from "./text.ts";
import type { ChatMessage } from "./chat_message.ts";

export const PAGERDUTY_SEVERITIES = ["critical", "error", "warning", "info"] as const;
export type PagerDutySeverity = typeof PAGERDUTY_SEVERITIES[number];

/** The JSON body POSTed to `https://events.pagerduty.com/v2/enqueue`. */
export interface PagerDutyEvent {
  routing_key: string;
  event_action: "trigger";
  dedup_key?: string;
  payload: {
    summary: string;
    source: string;
    severity: PagerDutySeverity;
    timestamp?: string;
    custom_details: { text: string; from_name: string };
  };
}

/** The webhook options PagerDuty reads: `routing_key` (required) and `severity`. */
export interface PagerDutyOptions {
  routing_key?: string;
  severity?: string;
}

// PagerDuty's documented field limits.
const MAX_DEDUP_KEY = 255;
const MAX_SUMMARY = 1_024;
// PagerDuty refuses events over 512 KB. Even if every unit of the text became a 6-byte `\u00XX`
// escape in JSON, 64,000 units stay under 384 KB, leaving ample room for the other fields.
const MAX_TEXT = 64_000;
const MAX_SOURCE = 255;
const MAX_FROM_NAME = 256;

/** A trigger event: the subject as summary, the sender as source, the text in custom details. */
export function pagerDutyEvent(message: ChatMessage, options: PagerDutyOptions): PagerDutyEvent {
  // The edge requires `routing_key` for `pagerduty` (CONTRACT section 6); reaching here without one is a bug.
  if (options.routing_key === undefined || options.routing_key === "") {
    throw new Error('Missing option "routing_key" for the pagerduty format');
  }
  const { id, at } = message;
  // Both are optional for PagerDuty, and an empty value would be refused: leave them out instead
  // (PagerDuty then makes its own dedup key and uses the time it received the event). The dedup key
  // is cut without an ellipsis: it is an identifier, not text for people.
  return {
    routing_key: options.routing_key,
    event_action: "trigger",
    ...(id === "" ? {} : { dedup_key: cut(id, MAX_DEDUP_KEY, "") }),
    payload: {
      summary: cut(oneLine(message.subject) || "(no subject)", MAX_SUMMARY),
      source: cut(message.from.email, MAX_SOURCE) || "unknown",
      severity: severity(options.severity),
      ...(at === "" ? {} : { timestamp: at }),
      custom_details: { text: cut(message.text, MAX_TEXT), from_name: cut(message.from.name, MAX_FROM_NAME) },
    },
  };
}

// Read leniently (`"Error"` means `error`), since a typo in case should not drop an alert to `info`.
function severity(value: string | undefined): PagerDutySeverity {
  const wanted = value?.trim().toLowerCase();
  return PAGERDUTY_SEVERITIES.find((known) => known === wanted) ?? "info";
}
