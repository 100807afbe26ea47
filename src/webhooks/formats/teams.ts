// The Microsoft Teams Workflows body for a chat message (an inbound email, an alert): an Adaptive
// Card message (CONTRACT section 7, notes/webhooks.md section 3.3).

import type { AttachmentLink } from "../payloads.ts";
import type { ChatMessage } from "./chat_message.ts";
import { cut, ELLIPSIS, oneLine, senderLine } from "./text.ts";

/** The JSON body POSTed to a Teams Workflows webhook. */
export interface TeamsMessage {
  type: "message";
  attachments: [{
    contentType: "application/vnd.microsoft.card.adaptive";
    contentUrl: null;
    content: AdaptiveCard;
  }];
}

/** The subset of Adaptive Card 1.2 the card uses. */
export interface AdaptiveCard {
  $schema: "http://adaptivecards.io/schemas/adaptive-card.json";
  type: "AdaptiveCard";
  version: "1.2";
  body: AdaptiveCardElement[];
}

export type AdaptiveCardElement =
  | { type: "TextBlock"; text: string; wrap: true; weight?: "Bolder"; size?: "Medium" }
  | { type: "FactSet"; facts: { title: string; value: string }[] };

// Teams answers 413 past about 28 KB, and one library found the real limit nearer 21 KB: the
// serialized body (UTF-8 bytes) stays at or under 20,000.
const MAX_BODY_BYTES = 20_000;
// Caps on the short parts, so that even in the worst case (every character escaped as `\u00XX` in
// JSON) they leave most of the budget to the text.
const MAX_SUBJECT = 500;
const SENDER = { maxName: 100, maxEmail: 254 };
const MAX_ATTACHMENTS = 500;
const encoder = new TextEncoder();

/** An Adaptive Card with the subject, a From (and Attachments) fact set and the text. */
export function teamsMessage(message: ChatMessage): TeamsMessage {
  const facts = [{ title: "From", value: senderLine(message.from, SENDER) }];
  if (message.attachments.length > 0) {
    facts.push({ title: "Attachments", value: cut(attachmentList(message.attachments), MAX_ATTACHMENTS) });
  }
  const textBlock: AdaptiveCardElement = { type: "TextBlock", text: "", wrap: true };
  const card: TeamsMessage = {
    type: "message",
    attachments: [{
      contentType: "application/vnd.microsoft.card.adaptive",
      contentUrl: null,
      content: {
        $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
        type: "AdaptiveCard",
        version: "1.2",
        body: [
          {
            type: "TextBlock",
            text: cut(oneLine(message.subject) || "(no subject)", MAX_SUBJECT),
            weight: "Bolder",
            size: "Medium",
            wrap: true,
          },
          { type: "FactSet", facts },
          textBlock,
        ],
      },
    }],
  };
  // Measure the card with an empty text, then give the text what is left of the byte budget.
  textBlock.text = cutToJsonBytes(message.text, MAX_BODY_BYTES - jsonBytes(card));
  return card;
}

function attachmentList(attachments: AttachmentLink[]): string {
  return attachments.map((a) => `${a.filename} (${formatSize(a.size)})`).join(", ");
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

// Cuts `value` so that its JSON string contents (quotes excluded) take at most `budget` UTF-8 bytes,
// ellipsis included. Iterating by code point keeps surrogate pairs whole.
function cutToJsonBytes(value: string, budget: number): string {
  const room = budget - jsonBytes(ELLIPSIS) + 2;
  let used = 0;
  let fitEnd = 0; // where the text can end with room left for the ellipsis
  let end = 0;
  for (const char of value) {
    used += jsonBytes(char) - 2;
    if (used > budget) return value.slice(0, fitEnd) + ELLIPSIS;
    end += char.length;
    if (used <= room) fitEnd = end;
  }
  return value;
}

function jsonBytes(value: unknown): number {
  return encoder.encode(JSON.stringify(value)).length;
}
