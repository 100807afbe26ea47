// The low-balance alert settings of a wallet (GET and PUT /token/settings), pure: the view with
// credentials redacted, and the change that replaces the whole configuration.
import { newEvent } from "../../events/catalogue.ts";
import type { LowBalanceWebhook, WalletSettingsRow } from "../../projections/wallet_settings.ts";
import type { CallDecision } from "../ledger/command.ts";
import { answer, jsonReply, type Reply, textReply } from "../http/reply.ts";
import { redactHeaders, redactOptions } from "../webhooks/redaction.ts";

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
    ...(settings?.low_balance_email ? { low_balance_email: settings.low_balance_email } : {}),
  }));
}

/** The new configuration; the signing key stays across changes, so receivers keep verifying. */
export function changeSettings(
  change: SettingsChange,
  current: WalletSettingsRow | undefined,
  freshSecret: string,
): CallDecision<Reply> {
  return answer(textReply(200, "OK"), {
    events: [newEvent("LowBalanceSettingsChanged", {
      threshold: change.threshold,
      ...(change.webhook ? { webhook: change.webhook } : {}),
      ...(change.email ? { email: change.email } : {}),
      secret: current?.alert_secret ?? freshSecret,
    })],
  });
}
