// GET and PUT /token/settings: low-balance alerts (1 credit each; issue 6).
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { z as zod } from "zod";
import type { AppEnv } from "../env.ts";
import { billed, billedFailure, billing } from "../billing.ts";
import { requireWallet } from "../middleware.ts";
import { settingsCalls } from "../../alerts/calls.ts";
import { SETTINGS } from "../../calls/prices.ts";
import { type LowBalanceWebhook } from "../../../projections/wallet_settings.ts";
import {
  billedRoute,
  BILLING_NOTE,
  BODY_REFUSED,
  ERROR_RESPONSES,
  jsonOk,
  serve,
  textOk,
} from "../openapi.ts";
import { documentedJson, readJsonBody } from "../json_body.ts";
import {
  checkWebhookUrl,
  Format,
  HeaderMap,
  MAILBOX_RULES,
  MAILBOX_RULES_SCHEMA,
  mailboxProblem,
  newDeliveryId,
  newMessageId,
  newWebhookSecret,
  OptionMap,
  Template,
  Url,
} from "../../webhooks/mod.ts";
import { WHOLE_PHRASE } from "../../parsed.ts";
import { randomId } from "../../ids.ts";

/** The alert webhook: a mailbox webhook's format rules (mailbox_rules.ts) hold for it too. */
export const LowBalanceWebhookInput = zod.strictObject({
  url: Url,
  headers: HeaderMap.optional(),
  format: Format.optional(),
  template: Template.optional(),
  options: OptionMap.optional(),
}).superRefine((webhook, ctx) => {
  const problem = mailboxProblem({
    format: webhook.format || undefined,
    template: webhook.template,
    options: webhook.options ?? {},
  });
  if (problem) {
    ctx.addIssue({ code: "custom", message: problem.replace(/^Invalid /, ""), params: WHOLE_PHRASE });
  }
}).meta({ description: MAILBOX_RULES, allOf: MAILBOX_RULES_SCHEMA });

/** PUT replaces the whole configuration: what is not sent is cleared. */
export const SettingsInput = zod.strictObject({
  low_balance_threshold: zod.number({ error: "must be an integer of at least 0" })
    .int("must be an integer of at least 0").min(0, "must be an integer of at least 0")
    .max(1e12, "must be at most 1000000000000").optional(),
  low_balance_webhook: LowBalanceWebhookInput.nullable().optional(),
  low_balance_email: zod.email("must be an email address").max(254, "must be at most 254 characters")
    .nullable().optional(),
  // What GET answers may be sent back as is: confirmation is the link's alone, so this is ignored.
  low_balance_email_confirmed: zod.boolean({ error: "must be a boolean" }).optional().meta({
    description: "Ignored: an address is confirmed only from the link mailed to it",
  }),
}, { error: "must be a JSON object" });

const SettingsView = z.object({
  low_balance_threshold: z.number().int(),
  low_balance_webhook: z.object({
    url: z.string(),
    headers: z.record(z.string(), z.string()),
    format: z.string().optional(),
    template: z.record(z.string(), z.unknown()).optional(),
    options: z.record(z.string(), z.string()),
    secret: z.string().openapi({ description: "Key of the Standard Webhooks signature on alerts" }),
  }).optional(),
  low_balance_email: z.string().optional(),
  low_balance_email_confirmed: z.boolean().optional().openapi({
    description: "With low_balance_email: whether its owner confirmed it from the link mailed to it. " +
      "Alerts go to the address only once confirmed",
  }),
}).openapi("CustomerSettings");

const getSettings = billedRoute({
  method: "get",
  path: "/token/settings",
  operationId: "getSettings",
  summary: "Low-balance alert settings",
  description: BILLING_NOTE,
  middleware: [requireWallet, billing(SETTINGS)] as const,
  responses: {
    ...jsonOk("The settings; header values and sensitive options redacted", SettingsView),
    ...ERROR_RESPONSES,
  },
});

const putSettings = billedRoute({
  method: "put",
  path: "/token/settings",
  operationId: "replaceSettings",
  summary: "Replace the low-balance alert settings",
  description: "An alert goes out once per episode when a debit leaves the balance below the threshold " +
    "(0 turns alerts off). A new low_balance_email gets a mail with a confirmation link (valid 48 hours; " +
    "saving the unconfirmed address again after 10 minutes sends a new one); alerts go there once it is " +
    "confirmed. " + BILLING_NOTE,
  middleware: [requireWallet, billing(SETTINGS)] as const,
  request: { body: documentedJson(SettingsInput, "The whole configuration") },
  responses: {
    ...BODY_REFUSED,
    ...textOk("`OK`"),
    ...ERROR_RESPONSES,
  },
});

/** The rule past the schema, which depends on the operator's setting: a safe URL. */
function checkWebhook(
  webhook: zod.infer<typeof LowBalanceWebhookInput>,
  allowPrivate: boolean,
): string | null {
  const urlProblem = checkWebhookUrl(webhook.url, { allowPrivate });
  return urlProblem?.replace("Invalid url", "Invalid low_balance_webhook.url") ?? null;
}

function webhookOf(input: zod.infer<typeof LowBalanceWebhookInput>): LowBalanceWebhook {
  return {
    url: input.url,
    headers: input.headers ?? {},
    ...(input.format ? { format: input.format } : {}),
    ...(input.format === "custom" && input.template !== undefined
      ? { template: input.template as Record<string, unknown> }
      : {}),
    options: input.options ?? {},
  };
}

export function settingsRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, getSettings, (c) => billed(c, settingsCalls.get({ walletId: c.get("walletId")! })));

  serve(app, putSettings, async (c) => {
    const input = await readJsonBody(c, SettingsInput);
    if (!input.ok) return billedFailure(c, 400, input.phrase);
    const { low_balance_threshold = 0, low_balance_webhook, low_balance_email } = input.value;
    if (low_balance_webhook) {
      const problem = checkWebhook(low_balance_webhook, c.get("services").config.allowPrivateWebhooks);
      if (problem) return billedFailure(c, 400, problem);
    }
    const change = {
      threshold: low_balance_threshold,
      ...(low_balance_webhook ? { webhook: webhookOf(low_balance_webhook) } : {}),
      ...(low_balance_email ? { email: low_balance_email } : {}),
    };
    const walletId = c.get("walletId")!;
    const ids = {
      freshSecret: newWebhookSecret(),
      freshLink: { linkId: `lnk_${randomId(20)}`, deliveryId: newDeliveryId(), messageId: newMessageId() },
    };
    return billed(c, settingsCalls.change({ walletId, change, ids }));
  });
}
