// The event catalogue: every fact the ledger can record, one zod schema per type.
// Never change the meaning of a type that has been written: add a new type or a field instead.
import { z } from "zod";
import { sensitive, sensitivePathsOf } from "./sensitivity.ts";

const credits = z.number().int().min(0);

/** What an idempotent call answered, kept so a retry with the same key gets it again. */
export const IdempotentReply = z.object({
  key: z.string(),
  fingerprint: z.string(),
  status: z.number().int(),
  contentType: z.string(),
  body: z.string(),
});

/**
 * A webhook's whole configuration after a change, so the read model folds it without the previous
 * row. Mailbox fields are absent on a scheduled webhook, `schedule` on a mailbox webhook; `email`
 * (the mailbox address) stays while a webhook is scheduled so it can become a mailbox again.
 * The code works with the union of src/webhooks/config/config.ts; this payload is converted to and
 * from it in src/webhooks/config/event_data.ts only.
 */
export const WebhookConfig = sensitive(
  z.object({
    webhookId: z.string(),
    url: z.string(),
    headers: z.record(z.string(), z.string()),
    format: z.string().optional(),
    template: z.record(z.string(), z.unknown()).optional(),
    options: z.record(z.string(), z.string()).optional(),
    includeAttachments: z.boolean().optional(),
    schedule: z.object({ cron: z.string(), timezone: z.string(), active: z.boolean() }).optional(),
    email: z.string().optional(),
    /** The Standard Webhooks signing key, `whsec_` + base64. */
    secret: z.string(),
    /** Creation time, strictly increasing within a wallet: the order of `GET /webhook`. */
    createdAt: z.iso.datetime(),
  }),
  ["url", "headers.*", "template", "options.*", "email", "secret"],
);

const deliveryKind = z.enum(["email", "scheduled", "alert"]);

/** Why a delivery was given up: the status it is shown with follows from it. */
export const ABANDON_CAUSES = [
  "retries exhausted",
  "final answer",
  "not retried",
  "webhook deleted",
] as const;

export const EventSchemas = {
  WalletOpened: z.object({}),
  CreditsGranted: z.object({ amount: credits, balance: credits, reason: z.string() }),
  CreditsPurchased: z.object({
    amount: credits,
    balance: credits,
    tier: z.string(),
    paymentId: z.string(),
  }),
  /** One authenticated call: its debit (cost may be 0) and what the call log shows. */
  CallBilled: sensitive(
    z.object({
      callId: z.string(),
      method: z.string(),
      path: z.string(),
      endpoint: z.string(),
      status: z.number().int(),
      error: z.string().optional(),
      cost: credits,
      balance: credits,
      ms: z.number().int().min(0),
      idempotency: IdempotentReply.optional(),
      /** The scoped key that made the call; absent: the wallet token (or no token: mail, runs). */
      keyId: z.string().optional(),
    }),
    ["path", "error", "idempotency.body"],
  ),
  KvWritten: sensitive(
    z.object({
      bucket: z.string(),
      key: z.string(),
      value: z.string(),
      expiresAt: z.iso.datetime(),
    }),
    ["bucket", "key", "value"],
  ),
  KvDeleted: sensitive(z.object({ bucket: z.string(), key: z.string() }), ["bucket", "key"]),
  /**
   * `POST /kv/{bucket}/{key}/incr`: a fact of its own rather than a KvWritten, so the log keeps
   * what the caller asked (`by`) apart from plain writes and an audit or usage report can tell
   * counters from values. It also carries the result (`value`) and the expiry it leaves (kept
   * from the entry, or fresh for a new key), so the read model folds it without the previous
   * row, exactly like KvWritten, and replay needs no arithmetic.
   */
  KvIncremented: sensitive(
    z.object({
      bucket: z.string(),
      key: z.string(),
      by: z.number().int(),
      value: z.number().int(),
      expiresAt: z.iso.datetime(),
    }),
    ["bucket", "key"],
  ),
  WalletDeactivated: z.object({ lastUsedAt: z.iso.datetime() }),
  /**
   * A scoped key made with POST /token/keys: its SHA-256 only, never the key. `buckets` absent:
   * every bucket; `spendCap` absent: no cap; `expiresAt` absent: never.
   */
  KeyCreated: sensitive(
    z.object({
      keyId: z.string(),
      name: z.string(),
      hash: z.string(),
      scope: z.enum(["read", "write"]),
      buckets: z.array(z.string()).optional(),
      spendCap: credits.optional(),
      expiresAt: z.iso.datetime().optional(),
    }),
    ["name", "buckets"],
  ),
  /**
   * The wallet was erased (DELETE /token, or deno task erase by an operator): its data key is
   * destroyed, so its sealed fields read as erased from now on; its read-model rows, attachments,
   * keys and webhooks are gone and the token answers 401. Its money (the wallet row, payments and
   * every event's amounts) stays, so the audit still sums. The counts are what was erased.
   */
  WalletErased: z.object({
    by: z.enum(["owner", "operator"]),
    kvEntries: z.number().int().min(0),
    webhooks: z.number().int().min(0),
    keys: z.number().int().min(0),
    attachments: z.number().int().min(0),
  }),
  /** The key answers 401 from this event on, on every instance. */
  KeyRevoked: z.object({ keyId: z.string() }),
  /** The whole low-balance configuration after PUT /token/settings (threshold 0: alerts off). */
  LowBalanceSettingsChanged: sensitive(
    z.object({
      threshold: credits,
      webhook: z.object({
        url: z.string(),
        headers: z.record(z.string(), z.string()),
        format: z.string().optional(),
        template: z.record(z.string(), z.unknown()).optional(),
        options: z.record(z.string(), z.string()),
      }).optional(),
      email: z.string().optional(),
      /** The Standard Webhooks key alert deliveries are signed with. */
      secret: z.string(),
      /** `email` is the address confirmed before, unchanged: alerts keep going there (issue 23). */
      emailConfirmed: z.literal(true).optional(),
      /** A confirmation link for `email` was sent: `linkId` names it, valid until `expiresAt`. */
      emailLink: z.object({ linkId: z.string(), expiresAt: z.iso.datetime() }).optional(),
    }),
    ["webhook.url", "webhook.headers.*", "webhook.template", "webhook.options.*", "email", "secret"],
  ),
  /** The link `linkId` was opened: alerts go to the settings' email address from now on. */
  AlertEmailConfirmed: z.object({ linkId: z.string() }),
  /** A debit took the balance below the threshold: one alert per episode. */
  LowBalanceAlerted: z.object({
    threshold: credits,
    balance: credits,
    channels: z.array(z.enum(["webhook", "email"])),
  }),
  WebhookCreated: WebhookConfig,
  WebhookUpdated: WebhookConfig,
  WebhookDeleted: z.object({ webhookId: z.string() }),
  /**
   * A scheduled webhook's run at its planned time: the debit is the CallBilled beside it, the POST
   * the outbox row `deliveryId`. `nextRunAt` is the plan after it (null: the cron cannot be planned).
   */
  ScheduleFired: z.object({
    webhookId: z.string(),
    plannedAt: z.iso.datetime(),
    executedAt: z.iso.datetime(),
    deliveryId: z.string(),
    nextRunAt: z.iso.datetime().nullable(),
  }),
  /** A run refused at its planned time (an empty wallet): nothing sent, nothing charged. */
  ScheduleRunFailed: z.object({
    webhookId: z.string(),
    plannedAt: z.iso.datetime(),
    executedAt: z.iso.datetime(),
    error: z.string(),
    nextRunAt: z.iso.datetime().nullable(),
    /**
     * The refusal's status (402). Written since issue 21: a refusal with it is a failed run of the
     * webhook's health (towards its pause); the ones written before it were not.
     */
    status: z.number().int().optional(),
  }),
  /**
   * Runs missed by more than the grace period (the service was down): every planned time from
   * `firstPlannedAt` up to, not including, `missedBefore` was skipped, nothing sent or charged.
   */
  ScheduleRunsSkipped: z.object({
    webhookId: z.string(),
    firstPlannedAt: z.iso.datetime(),
    missedBefore: z.iso.datetime(),
    error: z.string(),
    nextRunAt: z.iso.datetime().nullable(),
  }),
  /**
   * One POST of an outbox delivery. Moves no credits: `cost` is what the email or run that caused
   * it was charged (on attempt 1, 0 on retries), shown in the call log; `balance` is the wallet's
   * balance at the attempt.
   */
  DeliveryAttempted: sensitive(
    z.object({
      attemptId: z.string(),
      deliveryId: z.string(),
      webhookId: z.string(),
      kind: deliveryKind,
      messageId: z.string(),
      attempt: z.number().int().min(1),
      ok: z.boolean(),
      status: z.number().int().optional(),
      error: z.string().optional(),
      latencyMs: z.number().int().min(0),
      cost: credits,
      balance: credits,
      nextAttemptAt: z.iso.datetime().optional(),
      /** When the POST started (absent on older attempts: the event's time is near it). */
      at: z.iso.datetime().optional(),
      /** The failed delivery waits, without a planned attempt, until its paused webhook resumes. */
      held: z.boolean().optional(),
    }),
    ["error"],
  ),
  /** A delivery given up: retries exhausted, a final answer, or its webhook gone. */
  DeliveryAbandoned: z.object({
    deliveryId: z.string(),
    webhookId: z.string(),
    kind: deliveryKind,
    attempts: z.number().int().min(0),
    reason: z.string(),
    /** Absent on deliveries given up before it was written down: `reason` tells it then. */
    cause: z.enum(ABANDON_CAUSES).optional(),
  }),
  /**
   * A delivery queued again by its owner (one retry, or a recover over a window): its next attempt
   * is due at once, or when its paused webhook resumes. Moves no credits.
   */
  DeliveryRequeued: z.object({
    deliveryId: z.string(),
    webhookId: z.string(),
    messageId: z.string(),
    reason: z.enum(["retry", "recover"]),
    /** On the first delivery of a recover (since issue 21): the webhook's next recover queues none before. */
    nextRecoverAt: z.iso.datetime().optional(),
  }),
  /** The synchronous test send of POST /webhook/<id>/test, recorded in the delivery history. */
  WebhookTested: sensitive(
    z.object({
      deliveryId: z.string(),
      webhookId: z.string(),
      messageId: z.string(),
      at: z.iso.datetime(),
      ok: z.boolean(),
      status: z.number().int().optional(),
      error: z.string().optional(),
      latencyMs: z.number().int().min(0),
    }),
    ["error"],
  ),
  /**
   * A webhook stopped sending: paused by its owner, or by the service when its endpoint kept
   * failing (`failures` attempts in a row since `since`). A mailbox webhook's mail is still accepted
   * and waits; a scheduled webhook's schedule turns inactive (a WebhookUpdated beside it).
   */
  WebhookPaused: sensitive(
    z.object({
      webhookId: z.string(),
      reason: z.string(),
      failures: z.number().int().min(0).optional(),
      since: z.iso.datetime().optional(),
      lastStatus: z.number().int().optional(),
      lastError: z.string().optional(),
    }),
    ["lastError"],
  ),
  /** A paused webhook sends again; its waiting deliveries are due at once, oldest first. */
  WebhookResumed: z.object({ webhookId: z.string() }),
  /** An endpoint's attempts failed `failures` times in a row since `since`: one per episode. */
  WebhookFailing: sensitive(
    z.object({
      webhookId: z.string(),
      failures: z.number().int().min(1),
      since: z.iso.datetime(),
      lastStatus: z.number().int().optional(),
      lastError: z.string().optional(),
    }),
    ["lastError"],
  ),
  /**
   * An inbound email accepted for one mailbox (its debit is the CallBilled beside it). Metadata
   * only: the bodies travel in the outbox row and the files in the attachments table, never here.
   */
  EmailReceived: sensitive(
    z.object({
      deliveryId: z.string(),
      webhookId: z.string(),
      /** The mailbox address the mail was sent to. */
      recipient: z.string(),
      /** The Message-ID header, or the id generated for mail without one. */
      messageId: z.string(),
      from: z.string(),
      subject: z.string(),
      /** Bytes of the raw message as received over SMTP. */
      size: z.number().int().min(0),
      /** Every attachment of the mail; `id` is set when it was stored (includeAttachments on). */
      attachments: z.array(z.object({
        filename: z.string(),
        contentType: z.string(),
        size: z.number().int().min(0),
        id: z.string().optional(),
      })),
      /** Whether the parser cut a body, the subject, a recipient list or the attachments. */
      truncated: z.boolean(),
      /** The delivery's `webhook-id`; absent on mail recorded before it was written down. */
      webhookMessageId: z.string().optional(),
    }),
    ["recipient", "from", "subject", "attachments[].filename"],
  ),
} as const;

export type EventType = keyof typeof EventSchemas;

/**
 * The event types whose data may hold sensitive fields, with the paths declared beside their
 * schemas above. Money fields (amounts, balances, costs), types, versions and times are never
 * among them: the audit reads them without a key.
 */
export const SENSITIVE_PATHS: Partial<Record<EventType, readonly string[]>> = Object.fromEntries(
  Object.entries(EventSchemas)
    .map(([type, schema]) => [type, sensitivePathsOf(schema)] as const)
    .filter(([, paths]) => paths.length > 0),
);
export type EventData<T extends EventType> = z.infer<typeof EventSchemas[T]>;

/** An event the ledger is about to append. */
export type NewEvent = { [T in EventType]: { type: T; data: EventData<T> } }[EventType];

/** An event as stored in the log. */
export type StoredEvent = NewEvent & {
  walletId: string;
  version: number;
  position: number;
  recordedAt: Date;
};

export function newEvent<T extends EventType>(type: T, data: EventData<T>): NewEvent {
  return { type, data } as NewEvent;
}

/** Checks an event against its schema; used on append so no malformed fact enters the log. */
export function parseEvent(event: { type: string; data: unknown }): NewEvent {
  const schema = EventSchemas[event.type as EventType];
  if (!schema) throw new TypeError(`Unknown event type "${event.type}"`);
  return { type: event.type, data: schema.parse(event.data) } as NewEvent;
}
