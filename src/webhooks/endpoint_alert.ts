// The alerts of endpoint health (issue 13): a webhook whose endpoint keeps failing, and one paused
// because of it, told through the wallet's alert channel (the low-balance settings' webhook and
// email). One payload for both: which webhook, the last answer, how to resume, and the notice as
// subject and text, so custom templates and the chat formats can show it as it is.
import { z } from "zod";

export const ENDPOINT_ALERT_TYPES = ["webhook.failing", "webhook.paused"] as const;

export const EndpointAlertPayload = z.object({
  type: z.enum(ENDPOINT_ALERT_TYPES),
  webhookId: z.string(),
  /** Attempts failed in a row, and since when. */
  failures: z.number().int(),
  since: z.string(),
  lastStatus: z.number().int().nullable(),
  lastError: z.string().nullable(),
  /** The call that resumes (or would resume) the webhook. */
  resume: z.string(),
  token_hash: z.string(),
  subject: z.string(),
  text: z.string(),
});
export type EndpointAlertPayload = z.infer<typeof EndpointAlertPayload>;

export interface EndpointAlertFacts {
  type: typeof ENDPOINT_ALERT_TYPES[number];
  walletId: string;
  webhookId: string;
  /** The webhook's mode: how it resumes. */
  scheduled: boolean;
  failures: number;
  since: Date;
  lastStatus?: number;
  lastError?: string;
  /** The failures are runs the wallet could not pay, not answers of the endpoint. */
  unpaid?: boolean;
}

/** The call that resumes a webhook. */
export function resumeCall(webhookId: string, scheduled: boolean): string {
  const body = scheduled ? '{"schedule": {"active": true}}' : '{"active": true}';
  return `PATCH /webhook/${webhookId} with ${body}`;
}

/** The alert's payload. Pure. */
export function endpointAlert(facts: EndpointAlertFacts): EndpointAlertPayload {
  const { webhookId, failures, scheduled } = facts;
  const since = facts.since.toISOString();
  // The error names the status when there was one (`HTTP 503 Service Unavailable`).
  const last = facts.lastError ?? (facts.lastStatus !== undefined ? `HTTP ${facts.lastStatus}` : "no answer");
  const resume = resumeCall(webhookId, scheduled);
  const paused = facts.type === "webhook.paused";
  // Plain words in the subject: a mail header stays readable without encoded words.
  const subject = paused
    ? `Webhook ${webhookId} was paused, ${
      facts.unpaid ? "its runs cannot be paid" : "its endpoint keeps failing"
    }`
    : `Webhook ${webhookId} is failing`;
  const fix = facts.unpaid ? "Add credits" : "Fix the endpoint";
  const held = scheduled
    ? "Its schedule is inactive: no run is made or charged until you resume it."
    : "Its mail is still accepted and charged; the deliveries wait, kept 7 days, and go out when you resume it.";
  const text = paused
    ? `Webhook "${webhookId}" was paused after ${failures} failed attempts in a row since ${since}. ` +
      `Last answer: ${last}. ${held} ${fix}, then resume it: ${resume}.`
    : `The last ${failures} attempts to webhook "${webhookId}" failed, since ${since}. Last answer: ${last}. ` +
      `Deliveries are retried; if the endpoint keeps failing the webhook is paused. ` +
      `One success ends this alert's episode.`;
  return {
    type: facts.type,
    webhookId,
    failures,
    since,
    lastStatus: facts.lastStatus ?? null,
    lastError: facts.lastError ?? null,
    resume,
    token_hash: facts.walletId,
    subject,
    text,
  };
}
