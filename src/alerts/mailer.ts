// Sends alert emails (low balance, endpoint health, the confirmation of an address) through the SMTP
// relay of SMTP_RELAY_URL (nodemailer). Without a relay an alert email is recorded as not sent.
import nodemailer from "nodemailer";
import type { AttemptResult } from "../webhooks/mod.ts";
import { describeError } from "../log.ts";

/** A plain-text mail of the service. */
export interface AlertMail {
  subject: string;
  text: string;
}

export interface AlertMailer {
  send(to: string, mail: AlertMail): Promise<AttemptResult>;
}

const SEND_TIMEOUT_MS = 10_000;

export function createAlertMailer(relayUrl: string | undefined, from: string): AlertMailer {
  if (!relayUrl) {
    return {
      send: () =>
        Promise.resolve({
          ok: false,
          latencyMs: 0,
          retryable: false,
          error: "not sent: SMTP_RELAY_URL is not set",
        }),
    };
  }
  const transport = nodemailer.createTransport(
    {
      url: relayUrl,
      connectionTimeout: SEND_TIMEOUT_MS,
      greetingTimeout: SEND_TIMEOUT_MS,
      socketTimeout: SEND_TIMEOUT_MS,
    } as Parameters<typeof nodemailer.createTransport>[0],
  );
  return {
    async send(to, mail) {
      const started = performance.now();
      try {
        const info = await transport.sendMail({
          from,
          to,
          subject: mail.subject,
          text: mail.text,
        });
        const excerpt = String(info.response ?? "").slice(0, 1024);
        return {
          ok: true,
          status: 250,
          latencyMs: Math.round(performance.now() - started),
          ...(excerpt ? { excerpt } : {}),
        };
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        return {
          ok: false,
          ...(code ? { status: code } : {}),
          latencyMs: Math.round(performance.now() - started),
          // A 5xx from the relay is final; anything else (4xx, network) may pass later.
          retryable: !(code && code >= 500),
          error: `email not sent: ${describeError(error)}`.slice(0, 300),
        };
      }
    },
  };
}
