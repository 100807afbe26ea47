// Endpoint health (issue 13), pure: what a failed attempt of a webhook's delivery adds to the log.
// A streak of FAILING_ALERT_AFTER failures sends one alert per episode (WebhookFailing); a mailbox
// webhook whose every attempt failed, at least `pauseAfterFailures` of them over at least
// `pauseAfterMs`, pauses itself, and a scheduled webhook turns its schedule inactive after
// `pauseAfterFailures` failed runs (WebhookPaused, with its alert). A run refused because the
// wallet cannot pay is a failed run too (issue 21), so an unpaid schedule stops by itself. A
// success ends the episode (the health fold resets the streak).
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import type { WebhookHealthRow } from "../../projections/webhook_health.ts";
import type { WalletRow } from "../../projections/wallets.ts";
import type { Effect } from "../ledger/command.ts";
import { endpointAlert, type EndpointAlertFacts } from "./endpoint_alert.ts";
import type { WebhookConfig } from "./config/config.ts";
import { eventDataOf } from "../../projections/webhook_config_data.ts";
import { type NewDelivery, queueDelivery } from "./outbox.ts";
import type { HoldWebhookDeliveries } from "./outbox_effects.ts";

export interface HealthRules {
  /** WEBHOOK_PAUSE_AFTER_FAILURES. */
  pauseAfterFailures: number;
  /** WEBHOOK_PAUSE_AFTER_HOURS, in milliseconds. */
  pauseAfterMs: number;
}

export const DEFAULT_HEALTH_RULES: HealthRules = { pauseAfterFailures: 20, pauseAfterMs: 24 * 3600 * 1000 };
/** Failures in a row that send the "failing" alert (once per episode). */
export const FAILING_ALERT_AFTER = 5;
/** `pausedReason` of a webhook the service paused. */
export const PAUSED_BY_ENDPOINT = "endpoint failing";
/** `pausedReason` of a webhook its owner paused. */
export const PAUSED_BY_OWNER = "paused by owner";
/** `pausedReason` of a schedule the service made inactive because its runs could not be paid. */
export const PAUSED_UNPAID = "runs not paid";

/** Ids drawn before the command for the alerts it may queue (one per alert target). */
export interface AlertIds {
  deliveryIds: [string, string];
  messageIds: [string, string];
}

export interface FailedAttempt {
  walletId: string;
  wallet: Pick<WalletRow, "wallet_id" | "alert_webhook" | "alert_email"> | undefined;
  webhook: WebhookConfig | undefined;
  /** The health before this attempt (undefined: a webhook with no history). */
  health: WebhookHealthRow | undefined;
  status?: number;
  error?: string;
  /** A run refused because the wallet could not pay it, not an answer of the endpoint. */
  unpaid?: boolean;
  /** When the attempt started: the first failure of a new streak. */
  at: Date;
  now: Date;
  rules: HealthRules;
  /** Without them no alert is queued (the events still record the episode). */
  alertIds?: AlertIds;
}

export interface HealthOutcome {
  events: NewEvent[];
  effects: Effect[];
  /** A mailbox webhook paused by this attempt: its delivery waits too. */
  pausedMailbox: boolean;
}

/** What a failed attempt adds, after its DeliveryAttempted. */
export function healthAfterFailure(attempt: FailedAttempt): HealthOutcome {
  const { webhook, health, rules } = attempt;
  const none: HealthOutcome = { events: [], effects: [], pausedMailbox: false };
  if (!webhook || health?.paused_at) return none;
  const failures = (health?.failures ?? 0) + 1;
  const since = health?.failing_since ?? attempt.at;
  const scheduled = webhook.mode === "scheduled";
  // A scheduled webhook already inactive has nothing left to pause.
  if (scheduled && !webhook.schedule.active) return none;
  const pause = failures >= rules.pauseAfterFailures &&
    (scheduled || attempt.now.getTime() - since.getTime() >= rules.pauseAfterMs);
  const streak = {
    failures,
    since: since.toISOString(),
    ...(attempt.status !== undefined ? { lastStatus: attempt.status } : {}),
    ...(attempt.error !== undefined ? { lastError: attempt.error } : {}),
  };
  const facts = {
    ...streak,
    since,
    walletId: attempt.walletId,
    scheduled,
    ...(attempt.unpaid ? { unpaid: true } : {}),
  };
  const webhookId = webhook.webhookId;
  if (pause) {
    const events: NewEvent[] = [];
    const effects: Effect[] = [];
    if (scheduled) {
      const inactive = { ...webhook, schedule: { ...webhook.schedule, active: false } };
      events.push(newEvent("WebhookUpdated", eventDataOf(inactive)));
    } else {
      const hold: HoldWebhookDeliveries = {
        type: "holdWebhookDeliveries",
        walletId: facts.walletId,
        webhookId,
        hold: true,
      };
      effects.push(hold);
    }
    const reason = attempt.unpaid ? PAUSED_UNPAID : PAUSED_BY_ENDPOINT;
    events.push(newEvent("WebhookPaused", { webhookId, reason, ...streak }));
    effects.push(...alerts(attempt, { ...facts, type: "webhook.paused", webhookId }));
    return { events, effects, pausedMailbox: !scheduled };
  }
  if (failures >= FAILING_ALERT_AFTER && !health?.failing_alerted) {
    return {
      events: [newEvent("WebhookFailing", { webhookId, ...streak })],
      effects: alerts(attempt, { ...facts, type: "webhook.failing", webhookId }),
      pausedMailbox: false,
    };
  }
  return none;
}

/** One alert delivery per target the wallet's alert settings name. */
function alerts(attempt: FailedAttempt, facts: EndpointAlertFacts): Effect[] {
  const { wallet, alertIds } = attempt;
  if (!wallet || !alertIds) return [];
  const kinds: Extract<NewDelivery["kind"], `alert_${string}`>[] = [];
  if (wallet.alert_webhook) kinds.push("alert_webhook");
  if (wallet.alert_email) kinds.push("alert_email");
  const payload = endpointAlert(facts);
  return kinds.map((kind, i) =>
    queueDelivery({
      kind,
      id: alertIds.deliveryIds[i],
      walletId: wallet.wallet_id,
      messageId: alertIds.messageIds[i],
      cost: 0,
      payload: { ...payload },
    })
  );
}
