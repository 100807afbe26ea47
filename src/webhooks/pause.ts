// Pausing and resuming a webhook (issue 13), pure: what a change of configuration, or a PATCH with
// `active`, does to the pause. A mailbox webhook pauses and resumes by `active` (its mail is still
// accepted, and waits); a scheduled webhook's pause is its schedule, so an active schedule resumes
// one the service paused. A webhook that changes mode leaves the other mode's pause behind.
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import type { WebhookHealthRow } from "../../projections/webhook_health.ts";
import type { WebhookConfig } from "./config/config.ts";
import type { HoldWebhookDeliveries } from "./outbox_effects.ts";
import { PAUSED_BY_OWNER } from "./endpoint_health.ts";

export interface Pause {
  at: Date;
  reason: string;
}

export interface PauseChange {
  events: NewEvent[];
  effects: HoldWebhookDeliveries[];
  /** The pause after the change; null: sending. */
  pause: Pause | null;
}

/** The pause a health row records. */
export function pauseOf(health: WebhookHealthRow | undefined): Pause | null {
  return health?.paused_at ? { at: health.paused_at, reason: health.paused_reason ?? PAUSED_BY_OWNER } : null;
}

/**
 * The pause after `previous` becomes `next` (the same, for a PATCH of `active` alone), with
 * `requested` the `active` asked for, if any. Refusing `active` on a scheduled webhook is the
 * caller's.
 */
export function pauseChange(
  walletId: string,
  options: {
    previous: WebhookConfig | undefined;
    next: WebhookConfig;
    health: WebhookHealthRow | undefined;
    requested?: boolean;
    now: Date;
  },
): PauseChange {
  const { previous, next, health } = options;
  const paused = pauseOf(health);
  const webhookId = next.webhookId;
  const hold = (on: boolean): HoldWebhookDeliveries => ({
    type: "holdWebhookDeliveries",
    walletId,
    webhookId,
    hold: on,
  });
  const resumed = (): PauseChange => ({
    events: [newEvent("WebhookResumed", { webhookId })],
    effects: [hold(false)],
    pause: null,
  });
  const unchanged: PauseChange = { events: [], effects: [], pause: paused };
  if (next.mode === "scheduled") return paused && next.schedule.active ? resumed() : unchanged;
  const wasMailbox = previous?.mode === "mailbox";
  const wantsPause = options.requested === undefined ? paused !== null && wasMailbox : !options.requested;
  if (wantsPause && !paused) {
    return {
      events: [newEvent("WebhookPaused", { webhookId, reason: PAUSED_BY_OWNER })],
      effects: [hold(true)],
      pause: { at: options.now, reason: PAUSED_BY_OWNER },
    };
  }
  if (!wantsPause && paused) return resumed();
  return unchanged;
}
