// The low-balance alert settings of a wallet (GET and PUT /token/settings), pure: the view with
// credentials redacted, and the change that replaces the whole configuration (a new email address
// gets a confirmation link: email_confirmation.ts).
import { newEvent } from "../../events/catalogue.ts";
import type { LowBalanceWebhook, WalletSettingsRow } from "../../projections/wallet_settings.ts";
import type { CallDecision } from "../ledger/command.ts";
import { answer, jsonReply, type Reply, textReply } from "../calls/reply.ts";
import { redactHeaders, redactOptions } from "../webhooks/mod.ts";
import { emailConfirmationFor, type FreshLink } from "./email_confirmation.ts";

export interface SettingsChange {
  /** 0 turns alerts off. */
  threshold: number;
  webhook?: LowBalanceWebhook;
  email?: string;
}

export function settingsView(settings: WalletSettingsRow | undefined): CallDecision<Reply> {
  const webhook = settings?.low_balance_webhook;
  return answer(jsonReply(200, {
    low_balance_threshold: settings?.low_balance_threshold ?? 0,
    ...(webhook
      ? {
        low_balance_webhook: {
          url: webhook.url,
          headers: redactHeaders(webhook.headers),
          ...(webhook.format ? { format: webhook.format } : {}),
          ...(webhook.template ? { template: webhook.template } : {}),
          options: redactOptions(webhook.options),
          secret: settings!.alert_secret,
        },
      }
      : {}),
    ...(settings?.low_balance_email
      ? {
        low_balance_email: settings.low_balance_email,
        low_balance_email_confirmed: settings.low_balance_email_confirmed,
      }
      : {}),
  }));
}

export interface ChangeIds {
  /** The signing key of a wallet that has none yet. */
  freshSecret: string;
  /** The link (and its mail's outbox row) if the change sends one. */
  freshLink: FreshLink;
}

/**
 * The new configuration; the signing key stays across changes, so receivers keep verifying. An
 * address stays confirmed while it is unchanged; a new one gets a link.
 */
export function changeSettings(
  change: SettingsChange,
  current: WalletSettingsRow | undefined,
  options: { walletId: string; now: Date; ids: ChangeIds },
): CallDecision<Reply> {
  const confirmation = emailConfirmationFor(change.email, current, {
    walletId: options.walletId,
    now: options.now,
    fresh: options.ids.freshLink,
  });
  return answer(textReply(200, "OK"), {
    events: [newEvent("LowBalanceSettingsChanged", {
      threshold: change.threshold,
      ...(change.webhook ? { webhook: change.webhook } : {}),
      ...(change.email ? { email: change.email } : {}),
      secret: current?.alert_secret ?? options.ids.freshSecret,
      ...confirmation.change,
    })],
    effects: confirmation.effects,
  });
}
