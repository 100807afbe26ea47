// What a client may send to configure a webhook (CONTRACT section 6): one zod schema per request
// shape (create, replace, patch) and the rules of each field. The rules across fields are in
// rules.ts. Built with the `z` of zod-openapi (zod plus `.openapi()`), so the same schemas document
// the API.
import { z } from "@hono/zod-openapi";
import { EMAIL_FORMATS } from "../payloads.ts";
import { HEADER_NAME, HEADER_VALUE, RESERVED_HEADERS } from "../headers.ts";
import { hasAtMostCodePoints } from "../../code_points.ts";
import {
  cronProblem,
  IANA_NAME,
  MAX_CRON_LENGTH,
  MAX_TIMEZONE_LENGTH,
  timezoneProblem,
} from "../../../projections/cron.ts";
import { MAX_WEBHOOK_URL_LENGTH } from "../url_safety.ts";
import { MAILBOX_RULES, MAILBOX_RULES_SCHEMA, mailboxProblem } from "./mailbox_rules.ts";
import { WHOLE_PHRASE } from "../../parsed.ts";

export const MAX_WEBHOOKS_PER_WALLET = 100;
export const MAX_HEADERS = 20;
export const MAX_OPTIONS = 10;
export const MAX_OPTION_CHARS = 500;
const MAX_HEADER_NAME = 256;
const MAX_HEADER_VALUE = 4096;
const MAX_OPTION_NAME = 64;

export const WEBHOOK_ID_PATTERN = /^[A-Za-z0-9_-]{1,30}$/;
export const WEBHOOK_ID_RULE = "must be 1 to 30 characters of A-Z a-z 0-9 _ -";
/** A webhookId, in a body or (through WebhookIdParam) in a path. */
export const WebhookId = z.string().regex(WEBHOOK_ID_PATTERN, WEBHOOK_ID_RULE).openapi({
  example: "default",
});
/** The `{webhookId}` path parameter of the /webhook/{webhookId} routes. */
export const WebhookIdParam = z.object({
  webhookId: WebhookId.openapi({ param: { name: "webhookId", in: "path" } }),
});
export const DEFAULT_WEBHOOK_ID = "default";

// deno-lint-ignore no-control-regex
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** HEADER_NAME for JSON Schema, which has no flags: the reserved names refused in any case. */
function headerNamePattern(): string {
  const anyCase = (name: string) =>
    [...name].map((ch) => /[a-z]/.test(ch) ? `[${ch}${ch.toUpperCase()}]` : ch).join("");
  const reserved = [...RESERVED_HEADERS].map(anyCase).join("|");
  return `^(?!(?:${reserved})$)${HEADER_NAME.source.slice(1)}`;
}

/** "required" when the field is missing, else what it must be. */
function expected(what: string) {
  return { error: (issue: { input: unknown }) => issue.input === undefined ? "required" : `must be ${what}` };
}

export const HeaderMap = z.record(
  z.string(),
  z.string(expected("a string")),
  expected("an object of strings"),
)
  .superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > MAX_HEADERS) {
      ctx.addIssue({ code: "custom", message: `must have at most ${MAX_HEADERS} entries` });
      return;
    }
    for (const name of names) {
      const value = headers[name];
      const problem = !HEADER_NAME.test(name) || name.length > MAX_HEADER_NAME
        ? "is not a valid header name"
        : RESERVED_HEADERS.has(name.toLowerCase())
        ? "is set by the service"
        : value.length > MAX_HEADER_VALUE
        ? `must be at most ${MAX_HEADER_VALUE} characters`
        : CONTROL.test(value)
        ? "must not contain control characters"
        : !HEADER_VALUE.test(value)
        ? "must contain only Latin-1 characters (up to U+00FF)"
        : null;
      if (problem) ctx.addIssue({ code: "custom", path: [name], message: problem });
    }
  })
  .meta({
    maxProperties: MAX_HEADERS,
    propertyNames: { maxLength: MAX_HEADER_NAME, pattern: headerNamePattern() },
    additionalProperties: { type: "string", maxLength: MAX_HEADER_VALUE, pattern: HEADER_VALUE.source },
    description: `At most ${MAX_HEADERS} headers sent with every delivery; not the ones the service sets ` +
      `(${[...RESERVED_HEADERS].join(", ")}); values of tab, visible ASCII, space and Latin-1`,
  });

export const OptionMap = z.record(
  z.string(),
  z.string(expected("a string")),
  expected("an object of strings"),
)
  .superRefine((options, ctx) => {
    const names = Object.keys(options);
    if (names.length > MAX_OPTIONS) {
      ctx.addIssue({ code: "custom", message: `must have at most ${MAX_OPTIONS} entries` });
      return;
    }
    for (const name of names) {
      if (name.length === 0 || !hasAtMostCodePoints(name, MAX_OPTION_NAME)) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `name must be 1 to ${MAX_OPTION_NAME} characters`,
        });
      } else if (!hasAtMostCodePoints(options[name], MAX_OPTION_CHARS)) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `must be at most ${MAX_OPTION_CHARS} characters`,
        });
      }
    }
  })
  .meta({
    maxProperties: MAX_OPTIONS,
    propertyNames: { minLength: 1, maxLength: MAX_OPTION_NAME },
    additionalProperties: { type: "string", maxLength: MAX_OPTION_CHARS },
    description: `At most ${MAX_OPTIONS} format options (e.g. a chat id)`,
  });

const FORMAT_RULE = `must be one of ${EMAIL_FORMATS.join(", ")}`;
export const Format = z.enum([...EMAIL_FORMATS, ""], { error: FORMAT_RULE });
// The template's own rules (size, depth, placeholders) are the body's (mailbox_rules.ts).
export const Template = z.unknown().meta({
  description:
    'Only with format "custom", and required with it: a JSON object whose strings may hold placeholders',
});
const IncludeAttachments = z.boolean(expected("true or false"));

const Cron = z.string(expected("a string")).meta({
  maxLength: MAX_CRON_LENGTH,
  description: "Five fields: minute hour day-of-month month day-of-week, each a number or name (JAN-DEC, " +
    "SUN-SAT), `*`, a list, a range or a step (`*/15`, `1-5`); no `@` macros, no seconds and no L, W, #, ? " +
    "or +. Anything else is a `400` naming the field and the rule. Also refused (`400`, time-relative): a " +
    "schedule that, from the time of the request, never fires again (`0 0 30 2 *`).",
  example: "0 9 * * 1-5",
});
const Timezone = z.string(expected("a string")).meta({
  maxLength: MAX_TIMEZONE_LENGTH,
  pattern: IANA_NAME.source,
  description: "An IANA time zone name the service knows (`Europe/Paris`, `UTC`; any case): offsets " +
    "(`+02:00`), legacy IDs (`PST`) and unknown names are a `400`",
  example: "Europe/Paris",
});

/**
 * The rules of a schedule's own fields (cron syntax, a known zone) as the schedule's refinement, with
 * the phrases validateSchedule gives: `Invalid schedule.cron "0 0": must have 5 fields ...`.
 */
function scheduleFieldRules(schedule: { cron?: string; timezone?: string }, ctx: z.RefinementCtx) {
  const problem = (typeof schedule.cron === "string" ? cronProblem(schedule.cron) : null) ??
    (typeof schedule.timezone === "string" ? timezoneProblem(schedule.timezone) : null);
  if (problem) {
    ctx.addIssue({
      code: "custom",
      message: problem.replace(/^Invalid schedule\./, ""),
      params: WHOLE_PHRASE,
    });
  }
}

const Schedule = z.strictObject({
  cron: Cron,
  timezone: Timezone,
  active: z.boolean(expected("true or false")).optional(),
}, expected("an object")).superRefine(scheduleFieldRules);

export const Url = z.string(expected("a string")).meta({
  format: "uri",
  maxLength: MAX_WEBHOOK_URL_LENGTH,
  // https, and no user name or password before the host.
  pattern: "^[Hh][Tt][Tt][Pp][Ss]://[^@/?#\\\\\\s]+(?:[/?#\\\\]\\S*)?$",
  description: "An https URL on a public host (resolved again at every delivery), without user name or " +
    "password. (`http://` and private hosts only where the operator set UNSAFE_ALLOW_PRIVATE_WEBHOOKS)",
  example: "https://hooks.example.com/inbound",
});

const settingsFields = {
  url: Url,
  headers: HeaderMap.optional(),
  format: Format.optional(),
  template: Template.optional(),
  options: OptionMap.optional(),
  includeAttachments: IncludeAttachments.optional(),
  schedule: Schedule.optional(),
};

/** The fields only a mailbox webhook has; with `schedule` they are refused. */
export const MAILBOX_FIELDS = ["format", "template", "options", "includeAttachments"] as const;

/** The first mailbox-only field present in `input`, if any. */
export function mailboxFieldIn(input: Record<string, unknown>): string | undefined {
  return MAILBOX_FIELDS.find((field) => input[field] !== undefined);
}

const notWithSchedule = (field: string) => `${field}: not allowed with schedule`;

/** A body's rules across fields: a scheduled webhook has no mailbox fields; a format's needs. */
function settingsRules(input: z.infer<typeof SettingsBody>, ctx: z.RefinementCtx): void {
  const field = input.schedule ? mailboxFieldIn(input) : undefined;
  const problem = field ? `Invalid ${notWithSchedule(field)}` : input.schedule ? null : mailboxProblem({
    format: input.format || undefined,
    template: input.template,
    options: input.options ?? {},
  });
  if (problem) {
    ctx.addIssue({ code: "custom", message: problem.replace(/^Invalid /, ""), params: WHOLE_PHRASE });
  }
}

/** The same rules as JSON Schema: a schedule excludes the mailbox fields, else a format's needs apply. */
const SETTINGS_RULES_SCHEMA = {
  oneOf: [
    {
      title: "Scheduled",
      required: ["schedule"],
      not: { anyOf: MAILBOX_FIELDS.map((field) => ({ required: [field] })) },
    },
    { title: "Mailbox", not: { required: ["schedule"] }, allOf: MAILBOX_RULES_SCHEMA },
  ],
};

const SETTINGS_RULES = "A scheduled webhook (`schedule`) has none of the mailbox fields " +
  `(${MAILBOX_FIELDS.join(", ")}); a mailbox webhook: ${MAILBOX_RULES} The url must also be safe to call ` +
  "(a public host, checked at the request and at every delivery).";

const SettingsBody = z.strictObject(settingsFields, expected("a JSON object"));

/** POST /webhook. */
export const CreateWebhookInput = z.strictObject({
  ...settingsFields,
  webhookId: WebhookId.optional(),
}, expected("a JSON object")).superRefine(settingsRules).meta({
  description: SETTINGS_RULES,
  ...SETTINGS_RULES_SCHEMA,
});

/** PUT /webhook/<id>: the whole configuration; the path names the webhook. */
export const ReplaceWebhookInput = SettingsBody.superRefine(settingsRules).meta({
  description: SETTINGS_RULES,
  ...SETTINGS_RULES_SCHEMA,
});

/**
 * PATCH /webhook/<id>: only the fields sent; `null` clears a mailbox field or the schedule. `active`
 * pauses or resumes a mailbox webhook.
 */
export const PatchWebhookInput = z.strictObject({
  active: z.boolean(expected("true or false")).optional()
    .openapi({
      description: "Mailbox webhooks: false pauses (mail still accepted, deliveries wait), true resumes",
    }),
  url: Url.optional(),
  headers: HeaderMap.optional(),
  format: Format.nullable().optional(),
  template: Template.optional(),
  options: OptionMap.nullable().optional(),
  includeAttachments: IncludeAttachments.optional(),
  schedule: z.strictObject({
    cron: Cron.optional(),
    timezone: Timezone.optional(),
    active: z.boolean(expected("true or false")).optional(),
  }, expected("an object or null")).superRefine(scheduleFieldRules).nullable().optional(),
}, expected("a JSON object")).superRefine((patch, ctx) => {
  const field = patch.schedule ? mailboxFieldIn(patch) : undefined;
  if (field) ctx.addIssue({ code: "custom", message: notWithSchedule(field), params: WHOLE_PHRASE });
}).meta({
  description: "A `schedule` object excludes the mailbox fields in the same body. The configuration the " +
    "patch leaves keeps the rules of a whole one (see POST /webhook): a webhook that stays scheduled " +
    "takes no mailbox field, a schedule needs cron and timezone once merged, and " + MAILBOX_RULES,
  not: {
    required: ["schedule"],
    properties: { schedule: { type: "object" } },
    anyOf: MAILBOX_FIELDS.map((field) => ({ required: [field] })),
  },
});

export type CreateWebhookInput = z.infer<typeof CreateWebhookInput>;
export type ReplaceWebhookInput = z.infer<typeof ReplaceWebhookInput>;
export type PatchWebhookInput = z.infer<typeof PatchWebhookInput>;
