// What a mailbox format needs (CONTRACT section 6): a template with `custom` and only with it, a
// chat id for telegram, a routing key and a known severity for pagerduty. One function gives the 400
// phrase, used by the request schemas (input.ts, and the low-balance webhook of settings) as a
// refinement and again on a patched configuration (rules.ts); one JSON Schema states the same rules
// in /openapi.json.
import { MAX_TEMPLATE_BYTES, MAX_TEMPLATE_DEPTH, validateTemplate } from "../formats/custom_template.ts";
import { PAGERDUTY_SEVERITIES } from "../formats/pagerduty.ts";
import { quoteInput } from "../../storable_text.ts";

/** The mailbox fields the rules read; `format` absent (or "") is the inbound email payload as is. */
export interface MailboxChoice {
  format?: string;
  template?: unknown;
  options: Record<string, string>;
}

/** The 400 phrase of the first rule `mailbox` breaks, or null. */
export function mailboxProblem(mailbox: MailboxChoice): string | null {
  const { format, template, options } = mailbox;
  if (format === "custom") {
    if (template === undefined) return 'Invalid template: required for format "custom"';
    const problem = validateTemplate(template);
    if (problem) return problem;
  } else if (template !== undefined) {
    return 'Invalid template: only allowed with format "custom"';
  }
  if (format === "telegram" && !options.chat_id) {
    return 'Invalid options.chat_id: required for format "telegram"';
  }
  if (format === "pagerduty") {
    if (!options.routing_key) return 'Invalid options.routing_key: required for format "pagerduty"';
    const severity = options.severity;
    if (severity !== undefined && !(PAGERDUTY_SEVERITIES as readonly string[]).includes(severity)) {
      return `Invalid options.severity ${quoteInput(severity)}: must be one of ${
        PAGERDUTY_SEVERITIES.join(", ")
      }`;
    }
  }
  return null;
}

/** The rules in words, for the description of a body that has them. */
export const MAILBOX_RULES =
  `\`template\` is required with format \`custom\` and refused with any other: a JSON ` +
  `object of at most ${MAX_TEMPLATE_BYTES} bytes serialized, nested at most ${MAX_TEMPLATE_DEPTH} levels, ` +
  "whose placeholders name known fields; format `telegram` requires `options.chat_id`; format " +
  "`pagerduty` requires `options.routing_key`, and `options.severity`, when sent, is one of " +
  `${PAGERDUTY_SEVERITIES.join(", ")}.`;

const formatIs = (format: string) => ({ properties: { format: { const: format } }, required: ["format"] });
const optionsNeed = (option: string) => ({
  required: ["options"],
  properties: { options: { required: [option], properties: { [option]: { minLength: 1 } } } },
});

/** The same rules as JSON Schema (`allOf` of if/then), for /openapi.json. */
export const MAILBOX_RULES_SCHEMA = [
  { if: formatIs("custom"), then: { required: ["template"] }, else: { not: { required: ["template"] } } },
  { if: formatIs("telegram"), then: optionsNeed("chat_id") },
  {
    if: formatIs("pagerduty"),
    then: {
      ...optionsNeed("routing_key"),
      properties: {
        options: {
          required: ["routing_key"],
          properties: { routing_key: { minLength: 1 }, severity: { enum: [...PAGERDUTY_SEVERITIES] } },
        },
      },
    },
  },
];
