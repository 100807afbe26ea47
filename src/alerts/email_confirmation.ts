// Confirmation of alert email addresses (issue 23): no alert goes to an address before its owner
// opens a link sent to it, so a wallet cannot aim alert mail at a stranger. The link's token is the
// HMAC of the wallet, the link id and the address under the server secret: nothing secret is stored
// (not in the log, the outbox or a table the wallet can read), a link dies when the address changes
// or a newer link is sent, and rotating the server secret voids the links still pending.
import { z } from "zod";
import { newEvent } from "../../events/catalogue.ts";
import type { WalletSettingsRow } from "../../projections/wallet_settings.ts";
import { walletSettingsRead } from "../../projections/wallet_settings.ts";
import type { UnbilledCommand } from "../ledger/command.ts";
import { read } from "../ledger/reads.ts";
import { hmacSha256, timingSafeEqual } from "../hmac.ts";
import { type QueueDelivery, queueDelivery } from "../webhooks/mod.ts";
import { SERVICE_NAME } from "../service_info.ts";

/** How long a confirmation link works. */
export const EMAIL_LINK_TTL_MS = 48 * 3600 * 1000;
/** Saving the same unconfirmed address again sends a new link only once the last is this old. */
export const EMAIL_LINK_RESEND_AFTER_MS = 10 * 60 * 1000;
/** How the call log names attempts of confirmation mails. */
export const CONFIRMATION_EMAIL_PATH = "@alert-email-confirmation";
/** The page the link opens; its form POSTs to the same path. */
export const CONFIRM_PATH = "/alerts/confirm";

/** What the outbox holds of a confirmation mail: the link's id, never its token or the address. */
export const ConfirmationPayload = z.strictObject({ confirmation: z.strictObject({ linkId: z.string() }) });
export type ConfirmationPayload = z.infer<typeof ConfirmationPayload>;

export const WALLET_PATTERN = /^[0-9a-f]{64}$/;
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** The confirmation state a settings change writes: what LowBalanceSettingsChanged adds for `email`. */
export interface EmailConfirmationChange {
  emailConfirmed?: true;
  emailLink?: { linkId: string; expiresAt: string };
}

export interface FreshLink {
  linkId: string;
  deliveryId: string;
  messageId: string;
}

/**
 * Whether a change to `email` keeps the address confirmed, keeps the pending link, or sends a new one
 * (then with the outbox row of its mail). Pure.
 */
export function emailConfirmationFor(
  email: string | undefined,
  current: WalletSettingsRow | undefined,
  options: { walletId: string; now: Date; fresh: FreshLink },
): { change: EmailConfirmationChange; effects: QueueDelivery[] } {
  if (email === undefined) return { change: {}, effects: [] };
  const same = current?.low_balance_email === email;
  if (same && current.low_balance_email_confirmed) return { change: { emailConfirmed: true }, effects: [] };
  const expiresAt = current?.email_link_expires_at?.getTime();
  const sentAt = expiresAt === undefined ? undefined : expiresAt - EMAIL_LINK_TTL_MS;
  if (same && sentAt !== undefined && options.now.getTime() < sentAt + EMAIL_LINK_RESEND_AFTER_MS) {
    return { change: {}, effects: [] };
  }
  const { linkId, deliveryId, messageId } = options.fresh;
  const payload: ConfirmationPayload = { confirmation: { linkId } };
  return {
    change: {
      emailLink: { linkId, expiresAt: new Date(options.now.getTime() + EMAIL_LINK_TTL_MS).toISOString() },
    },
    effects: [queueDelivery({
      kind: "alert_email",
      id: deliveryId,
      walletId: options.walletId,
      messageId,
      cost: 0,
      payload,
    })],
  };
}

/** The link's token: base64url HMAC-SHA256, length-prefixed parts so no two links sign alike. */
export async function emailLinkToken(
  secret: string,
  link: { walletId: string; linkId: string; email: string },
): Promise<string> {
  const parts = [link.walletId, link.linkId, link.email].map((part) => `${part.length}:${part}`);
  const mac = await hmacSha256(secret, `alert-email-link-v1\n${parts.join("\n")}`);
  return btoa(String.fromCharCode(...mac)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The pending link of the settings, when there is one to send or to open at `now`. */
export function pendingLink(
  settings: WalletSettingsRow | undefined,
  now: Date,
): { linkId: string; email: string } | undefined {
  if (!settings?.low_balance_email || settings.low_balance_email_confirmed) return undefined;
  if (!settings.email_link_id || !settings.email_link_expires_at) return undefined;
  if (settings.email_link_expires_at.getTime() <= now.getTime()) return undefined;
  return { linkId: settings.email_link_id, email: settings.low_balance_email };
}

/** The mail that carries the link. */
export function confirmationMail(link: string, email: string): { subject: string; text: string } {
  return {
    subject: `Confirm ${email} for ${SERVICE_NAME} alerts`,
    text:
      `Someone asked ${SERVICE_NAME} to send low-balance and webhook alerts of a wallet to ${email}.\n\n` +
      `To receive them, open this link within 48 hours and press "Confirm":\n\n${link}\n\n` +
      "If you did not ask for this, ignore this mail: no alert is sent to this address unless it is confirmed.",
  };
}

export type ConfirmOutcome = "confirmed" | "already confirmed" | "invalid";

/** Checks a presented token against the settings' pending link. */
export async function presentedLink(
  secret: string,
  { presented, settings, now }: {
    presented: { walletId: string; token: string };
    settings: WalletSettingsRow | undefined;
    now: Date;
  },
): Promise<{ linkId: string; email: string } | "already confirmed" | undefined> {
  if (settings?.low_balance_email && settings.low_balance_email_confirmed) {
    // Only the holder of a link for this very address learns that it is confirmed.
    const linkId = settings.email_link_id;
    if (!linkId) return undefined;
    const token = await emailLinkToken(secret, { ...presented, linkId, email: settings.low_balance_email });
    return timingSafeEqual(token, presented.token) ? "already confirmed" : undefined;
  }
  const pending = pendingLink(settings, now);
  if (!pending) return undefined;
  const token = await emailLinkToken(secret, { walletId: presented.walletId, ...pending });
  return timingSafeEqual(token, presented.token) ? pending : undefined;
}

/**
 * AlertEmailConfirmed for the link, under the wallet's lock: only while the settings still name the
 * link and its address (a change since the check voids it) and the wallet is active.
 */
export function confirmEmailCommand(walletId: string, link: { linkId: string; email: string }) {
  const reads = { settings: read(walletSettingsRead, walletId) };
  const command: UnbilledCommand<ConfirmOutcome, typeof reads> = {
    walletId,
    reads,
    decide({ wallet, reads, now }) {
      if (!wallet || wallet.deactivated_at) return { outcome: "invalid" };
      const settings = reads.settings;
      if (settings?.low_balance_email !== link.email || settings.email_link_id !== link.linkId) {
        return { outcome: "invalid" };
      }
      if (settings.low_balance_email_confirmed) return { outcome: "already confirmed" };
      if (!pendingLink(settings, now)) return { outcome: "invalid" };
      return { outcome: "confirmed", events: [newEvent("AlertEmailConfirmed", { linkId: link.linkId })] };
    },
  };
  return command;
}
