// The deliveries of the API (issue 13): one zod schema per shape, which both types the answers and
// documents them in /openapi.json, and the view of a delivery record. `deliveryId` is the
// `webhook-id` header value, the same on every attempt.
import { z } from "@hono/zod-openapi";
import {
  DELIVERY_STATUSES,
  type DeliveryRecord,
  type PageCursor,
} from "../../../projections/delivery_history_reads.ts";
import { WebhookId } from "../config/input.ts";
import { type Parsed, WHOLE_PHRASE } from "../../parsed.ts";
import { integerParam } from "../../calls/integer_pattern.ts";
import { quoteInput } from "../../storable_text.ts";

export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;
const DELIVERY_ID = /^[A-Za-z0-9_-]{1,100}$/;

const dateTime = (description: string) => z.string().openapi({ format: "date-time", description });

export const DeliveryAttemptView = z.strictObject({
  at: dateTime("When the attempt started"),
  statusCode: z.number().int().nullable()
    .openapi({ description: "The receiver's status; null when it did not answer (network error, timeout)" }),
  latencyMs: z.number().int(),
  error: z.string().nullable().openapi({ description: "Why the attempt failed; null when it succeeded" }),
  responseExcerpt: z.string().nullable()
    .openapi({ description: "At most 1 KiB of the answer's body, as text; null without one" }),
}).openapi("DeliveryAttempt");

export const DeliveryView = z.strictObject({
  deliveryId: z.string().openapi({ description: "The webhook-id header value, the same on every attempt" }),
  kind: z.enum(["email", "scheduled", "test"]),
  createdAt: dateTime("When the delivery was queued"),
  status: z.enum(DELIVERY_STATUSES).openapi({
    description: "pending: an attempt is planned; paused: waits for its webhook to resume; " +
      "failed: a final answer (a 4xx, a failed run or test); abandoned: given up after its retries",
  }),
  attempts: z.array(DeliveryAttemptView).openapi({ description: "Oldest first, at most the last 50" }),
  nextAttemptAt: z.string().nullable().openapi({ format: "date-time", description: "null: none planned" }),
}).openapi("Delivery");
export type DeliveryView = z.infer<typeof DeliveryView>;

export const DeliveryWithPayload = DeliveryView.extend({
  payload: z.unknown().openapi({
    description: "The JSON body as last sent; before the first attempt (pending, or held by a paused " +
      "webhook) the body it will be sent with, rendered now in the webhook's format (attachment links " +
      "signed now, valid 1 hour, as each attempt signs its own); null when the format cannot render it",
  }),
  payloadSent: z.boolean().openapi({
    description: "true: payload is the body as last sent; false: the body it will be sent with",
  }),
}).openapi("DeliveryWithPayload");

export const DeliveryPage = z.strictObject({
  deliveries: z.array(DeliveryView),
  nextCursor: z.string().nullable().openapi({
    description: "Pass as cursor for the next page; null: no more",
  }),
}).openapi("DeliveryPage");

export const RecoverResult = z.strictObject({
  queued: z.number().int().openapi({ description: "Deliveries queued again" }),
}).openapi("RecoverResult");

const instant = z.iso.datetime({
  offset: true,
  error: "must be a date-time (ISO 8601, e.g. 2027-03-01T12:00:00Z)",
});

export const RecoverInput = z.strictObject({
  // .meta, not .openapi: the body is documented by zod's own JSON Schema (documentedJson), which reads meta.
  since: instant.meta({
    description:
      "Deliveries created at or after this. Time-relative, refused with `400` otherwise: at most " +
      "7 days before the request, and in the past when `until` is absent",
  }),
  until: instant.optional().meta({ description: "Before this, and after `since` (else `400`); default now" }),
}, { error: "must be a JSON object" }).superRefine((window, ctx) => {
  // A rule across the two fields, so the schema's: the decision keeps only the time-relative ones.
  if (window.until !== undefined && Date.parse(window.until) <= Date.parse(window.since)) {
    ctx.addIssue({
      code: "custom",
      message: `until "${window.until}": must be after since`,
      params: WHOLE_PHRASE,
    });
  }
});
export type RecoverInput = z.infer<typeof RecoverInput>;

export const DeliveriesQuery = z.object({
  status: z.enum(DELIVERY_STATUSES, { error: `must be one of ${DELIVERY_STATUSES.join(", ")}` }).optional(),
  limit: integerParam(1, MAX_PAGE).openapi({
    description: `1 to ${MAX_PAGE}, default ${DEFAULT_PAGE}`,
    example: "20",
  }),
  cursor: z.string().max(512, "must be a nextCursor of this list").optional()
    .openapi({
      description:
        "The nextCursor of the previous page of this list, as it was answered (opaque); any other " +
        "value is a billed `400`",
    }),
});

export const DeliveryParams = z.object({
  webhookId: WebhookId.openapi({ param: { name: "webhookId", in: "path" } }),
  deliveryId: z.string().regex(DELIVERY_ID, "must be 1 to 100 characters of A-Z a-z 0-9 _ -")
    .openapi({ param: { name: "deliveryId", in: "path" }, example: "msg_3kTqWx9aZ0b1" }),
});

/** The API's delivery. A delivery's next attempt shows only while one is planned. */
export function deliveryView(record: DeliveryRecord): DeliveryView {
  const { row, status, excerpts } = record;
  return {
    deliveryId: row.message_id ?? row.delivery_id,
    kind: row.kind,
    createdAt: row.created_at.toISOString(),
    status,
    attempts: row.attempts.map((a) => ({
      at: a.at,
      statusCode: a.statusCode,
      latencyMs: a.latencyMs,
      error: a.error,
      responseExcerpt: excerpts.get(a.attemptId) ?? null,
    })),
    nextAttemptAt: status === "pending" ? row.next_attempt_at?.toISOString() ?? null : null,
  };
}

/** The cursor after a delivery: opaque to clients. */
export function cursorAfter(record: DeliveryRecord): string {
  const value = JSON.stringify([record.row.created_at.toISOString(), record.row.delivery_id]);
  return btoa(value).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

export function parseCursor(cursor: string): Parsed<PageCursor> {
  const refused = {
    ok: false as const,
    phrase: `Invalid cursor ${quoteInput(cursor)}: must be a nextCursor of this list`,
  };
  try {
    const [createdAt, deliveryId] = JSON.parse(atob(cursor.replaceAll("-", "+").replaceAll("_", "/")));
    if (typeof createdAt !== "string" || Number.isNaN(Date.parse(createdAt))) return refused;
    if (typeof deliveryId !== "string" || !DELIVERY_ID.test(deliveryId)) return refused;
    return { ok: true, value: { createdAt, deliveryId } };
  } catch {
    return refused;
  }
}
