// @ts-check
/// <reference lib="dom" />
// The webhook forms. The new-webhook form (1 credit): a mailbox (mail to its address is posted to the
// URL, as is or in a chat format) or a schedule (cron and time zone); the signing secret and the
// mailbox address are shown once, at creation, with copy buttons. And the settings both it and a
// card's edit form (webhook_actions.js) edit beyond the URL and schedule: a mailbox's format with its own options (telegram's chat_id, pagerduty's
// routing_key and severity, a custom format's JSON template), further options, whether attachments go
// along, and extra headers as name/value rows. Each part reads what a create sends, or what changed
// for a PATCH; the service hides secret values as "***", which a change must type again.
import { byId, copyButton, el } from "./view.js";
import { priceLabel, PRICES } from "./prices.js";
import { schedulePreview } from "./schedule_preview.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["Webhook"]} Webhook */
/** @typedef {import("./api.js").paths["/webhook"]["post"]["requestBody"]["content"]["application/json"]} NewWebhook */

/** @typedef {import("./api.js").schemas["MailboxWebhook"]} MailboxWebhook */
/** @typedef {import("./api.js").paths["/webhook/{webhookId}"]["patch"]["requestBody"]["content"]["application/json"]} WebhookPatch */
/** @typedef {NonNullable<WebhookPatch["format"]>} Format */
/** @typedef {(name: string) => string} IdOf the element id of a field, e.g. `wh-format` */
/** @typedef {{ error: string } | { patch: WebhookPatch }} Read */

/** How the service shows a value it keeps secret (a header's, an option named key, token or secret). */
export const HIDDEN = "***";
const MAX_HEADER_ROWS = 20;

const FORMATS = [
  ["", "the email payload as is"],
  ["slack", "Slack"],
  ["discord", "Discord"],
  ["teams", "Teams"],
  ["telegram", "Telegram"],
  ["pagerduty", "PagerDuty"],
  ["custom", "Custom (a JSON template)"],
];
/** The options each format reads from its own field; any other goes in the name=value lines. */
const FORMAT_OPTIONS = /** @type {Record<string, string[]>} */ ({
  telegram: ["chat_id"],
  pagerduty: ["routing_key", "severity"],
});
const SEVERITIES = ["", "critical", "error", "warning", "info"];

/** `name=value` lines to a map; a line without `=` is refused. */
export function optionsOf(/** @type {string} */ text) {
  /** @type {Record<string, string>} */
  const options = {};
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const at = line.indexOf("=");
    if (at < 1) return { error: `Invalid option "${line.slice(0, 40)}": write name=value, one a line` };
    options[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return { options };
}

/** The same map, as the same text, whatever the order of its names. */
function sameMap(/** @type {Record<string, string>} */ a, /** @type {Record<string, string>} */ b) {
  const text = (/** @type {Record<string, string>} */ m) => JSON.stringify(Object.entries(m).sort());
  return text(a) === text(b);
}

/** A refusal when a value the service hid is sent back as it was shown. */
function hiddenLeft(
  /** @type {string} */ what,
  /** @type {Record<string, string>} */ next,
  /** @type {Record<string, string>} */ current,
) {
  const name = Object.keys(next).find((n) => next[n] === HIDDEN && current[n] === HIDDEN);
  return name === undefined ? undefined : `${what} "${name}": the service hides its value, so type it ` +
    `again (or remove it) to change the ${what.toLowerCase()}s`;
}

/** A labelled input or select. */
function labelled(/** @type {string} */ id, /** @type {string} */ label, /** @type {HTMLElement} */ control) {
  control.id = id;
  return [el("label", { for: id }, label), control];
}

function textInput(/** @type {string} */ value, placeholder = "") {
  const input = /** @type {HTMLInputElement} */ (el("input", { spellcheck: "false", autocomplete: "off" }));
  input.value = value;
  if (placeholder) input.placeholder = placeholder;
  return input;
}

/**
 * A mailbox's format, options, template and attachments.
 * @param {IdOf} idOf
 * @param {MailboxWebhook} [current] the webhook edited; none for a new one
 */
export function mailboxSettings(idOf, current) {
  const options = current?.options ?? {};
  const format = /** @type {HTMLSelectElement} */ (el(
    "select",
    {},
    ...FORMATS.map(([value, label]) =>
      el("option", { value, ...(value === (current?.format ?? "") ? { selected: "" } : {}) }, label)
    ),
  ));
  const chatId = textInput(options.chat_id ?? "", "-1001234567890");
  const routingKey = textInput(options.routing_key ?? "");
  const severity = /** @type {HTMLSelectElement} */ (el(
    "select",
    {},
    ...SEVERITIES.map((value) =>
      el(
        "option",
        { value, ...(value === (options.severity ?? "") ? { selected: "" } : {}) },
        value || "the service's default",
      )
    ),
  ));
  const template = /** @type {HTMLTextAreaElement} */ (el("textarea", { rows: "4", spellcheck: "false" }));
  template.value = current?.template ? JSON.stringify(current.template, null, 2) : "";
  template.placeholder = '{"text": "{{subject}}"}';
  const others = Object.entries(options)
    .filter(([name]) => !(FORMAT_OPTIONS[current?.format ?? ""] ?? []).includes(name));
  const more = /** @type {HTMLTextAreaElement} */ (el("textarea", { rows: "2", spellcheck: "false" }));
  more.value = others.map(([name, value]) => `${name}=${value}`).join("\n");
  const attachments = /** @type {HTMLInputElement} */ (el("input", { type: "checkbox" }));
  attachments.checked = current?.includeAttachments === true;

  const telegramPart = el(
    "div",
    { class: "settings" },
    ...labelled(idOf("chat-id"), "Telegram chat_id", chatId),
  );
  const pagerdutyPart = el(
    "div",
    { class: "settings" },
    ...labelled(idOf("routing-key"), "PagerDuty routing_key", routingKey),
    ...labelled(idOf("severity"), "PagerDuty severity", severity),
  );
  const customPart = el(
    "div",
    { class: "settings" },
    ...labelled(idOf("template"), "Template (a JSON object; {{placeholders}} in its strings)", template),
  );
  const shown = () => {
    telegramPart.hidden = format.value !== "telegram";
    pagerdutyPart.hidden = format.value !== "pagerduty";
    customPart.hidden = format.value !== "custom";
  };
  format.addEventListener("change", shown);
  shown();

  const nodes = [
    ...labelled(idOf("format"), "Format", format),
    telegramPart,
    pagerdutyPart,
    customPart,
    ...labelled(idOf("options"), "More format options (name=value, one a line)", more),
    el(
      "label",
      { for: idOf("attachments") },
      Object.assign(attachments, { id: idOf("attachments") }),
      " Include attachments in the payload",
    ),
  ];

  /** The options the form shows for the chosen format, plus the further lines. */
  function chosenOptions() {
    const parsed = optionsOf(more.value);
    if (!parsed.options) return { error: /** @type {string} */ (parsed.error) };
    /** @type {Record<string, string>} */
    const chosen = { ...parsed.options };
    if (format.value === "telegram" && chatId.value.trim()) chosen.chat_id = chatId.value.trim();
    if (format.value === "pagerduty") {
      if (routingKey.value.trim()) chosen.routing_key = routingKey.value.trim();
      if (severity.value) chosen.severity = severity.value;
    }
    return { options: chosen };
  }

  /** The template as JSON, refused here when it is not JSON; the service judges the rest. */
  function chosenTemplate() {
    if (format.value !== "custom") return {};
    try {
      return { template: JSON.parse(template.value) };
    } catch (error) {
      return { error: `Invalid template: it is not JSON (${/** @type {Error} */ (error).message})` };
    }
  }

  /** @returns {Read} the mailbox fields a new webhook sends */
  function forCreate() {
    const chosen = chosenOptions();
    if (!chosen.options) return { error: /** @type {string} */ (chosen.error) };
    const parsed = chosenTemplate();
    if (parsed.error) return { error: parsed.error };
    return {
      patch: {
        ...(format.value ? { format: /** @type {Format} */ (format.value) } : {}),
        ...(Object.keys(chosen.options).length > 0 ? { options: chosen.options } : {}),
        ...("template" in parsed ? { template: parsed.template } : {}),
        ...(attachments.checked ? { includeAttachments: true } : {}),
      },
    };
  }

  /** @returns {Read} only the mailbox fields that differ from the webhook's */
  function changes() {
    const chosen = chosenOptions();
    if (!chosen.options) return { error: /** @type {string} */ (chosen.error) };
    const parsed = chosenTemplate();
    if (parsed.error) return { error: parsed.error };
    /** @type {WebhookPatch} */
    const patch = {};
    if (format.value !== (current?.format ?? "")) patch.format = /** @type {Format} */ (format.value);
    if (!sameMap(chosen.options, options)) {
      const hidden = hiddenLeft("Option", chosen.options, options);
      if (hidden) return { error: hidden };
      patch.options = chosen.options;
    }
    if ("template" in parsed && JSON.stringify(parsed.template) !== JSON.stringify(current?.template)) {
      patch.template = parsed.template;
    }
    if (attachments.checked !== (current?.includeAttachments === true)) {
      patch.includeAttachments = attachments.checked;
    }
    return { patch };
  }

  return { nodes, forCreate, changes };
}

/**
 * Extra headers sent with every delivery, as name/value rows, for either kind of webhook.
 * @param {IdOf} idOf
 * @param {Record<string, string>} [current] the webhook's headers (values hidden); none for a new one
 */
export function headerRows(idOf, current = {}) {
  const rows = el("div", { class: "header-rows" });
  const legend = el("legend", {}, "Extra headers sent with every delivery");
  const box = el("fieldset", { id: idOf("headers") }, legend, rows);
  let made = 0;

  function addRow(name = "", value = "") {
    if (rows.children.length >= MAX_HEADER_ROWS) return;
    const n = made++;
    const nameInput = textInput(name, "X-Env");
    const valueInput = textInput(value);
    const remove = el("button", { type: "button", class: "secondary" }, "Remove");
    const row = el(
      "div",
      { class: "header-row" },
      ...labelled(idOf(`header-name-${n}`), "Name", nameInput),
      ...labelled(idOf(`header-value-${n}`), "Value", valueInput),
      remove,
    );
    remove.setAttribute("aria-label", `Remove header ${name || n + 1}`);
    remove.addEventListener("click", () => {
      row.remove();
      add.focus();
    });
    rows.append(row);
    return nameInput;
  }
  const add = el("button", { type: "button", class: "secondary", id: idOf("header-add") }, "Add a header");
  add.addEventListener("click", () => addRow()?.focus());
  box.append(add);
  for (const [name, value] of Object.entries(current)) addRow(name, value);

  /** The rows as a map; a row with a value and no name is refused. */
  function chosen() {
    /** @type {Record<string, string>} */
    const headers = {};
    for (const row of rows.children) {
      const [name, value] = [...row.querySelectorAll("input")].map((i) => i.value.trim());
      if (!name && value) return { error: `Invalid header: a value "${value.slice(0, 40)}" has no name` };
      if (name) headers[name] = value;
    }
    return { headers };
  }

  /** @returns {Read} the headers a new webhook sends */
  function forCreate() {
    const read = chosen();
    if (!read.headers) return { error: /** @type {string} */ (read.error) };
    return { patch: Object.keys(read.headers).length > 0 ? { headers: read.headers } : {} };
  }

  /** @returns {Read} the headers, when they differ from the webhook's (the whole map replaces it) */
  function changes() {
    const read = chosen();
    if (!read.headers) return { error: /** @type {string} */ (read.error) };
    if (sameMap(read.headers, current)) return { patch: {} };
    const hidden = hiddenLeft("Header", read.headers, current);
    return hidden ? { error: hidden } : { patch: { headers: read.headers } };
  }

  return { nodes: [box], forCreate, changes };
}

/**
 * @param {Session} session
 * @param {{ made(webhook: Webhook): void }} list where a new webhook's card goes
 */
export function webhookForm(session, list) {
  const form = /** @type {HTMLFormElement} */ (byId("webhook-form"));
  const id = /** @type {HTMLInputElement} */ (byId("wh-id"));
  const url = /** @type {HTMLInputElement} */ (byId("wh-url"));
  const schedule = /** @type {HTMLInputElement} */ (byId("wh-kind-schedule"));
  const mailboxFields = byId("wh-mailbox-fields");
  const scheduleFields = byId("wh-schedule-fields");
  const mailbox = mailboxSettings((name) => `wh-${name}`);
  const headers = headerRows((name) => `wh-${name}`);
  mailboxFields.replaceChildren(...mailbox.nodes);
  byId("wh-headers").replaceChildren(...headers.nodes);
  const cron = /** @type {HTMLInputElement} */ (byId("wh-cron"));
  const zone = /** @type {HTMLInputElement} */ (byId("wh-timezone"));
  const made = byId("wh-made");
  byId("wh-create").textContent = `Create (${priceLabel(PRICES.webhook)})`;
  zone.value = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

  const kind = () => {
    mailboxFields.hidden = schedule.checked;
    scheduleFields.hidden = !schedule.checked;
    cron.required = schedule.checked;
  };
  for (const radio of form.querySelectorAll("input[name=wh-kind]")) radio.addEventListener("change", kind);
  kind();
  schedulePreview(session);

  /** The signing secret, and a mailbox's address, shown this once. */
  function showOnce(/** @type {Webhook} */ webhook) {
    const secret = el("code", { class: "secret" }, webhook.secret ?? "");
    const parts = [
      el("p", {}, el("strong", {}, `${webhook.webhookId} made. Its signing secret, shown this once:`)),
      el("p", {}, secret),
      copyButton("Copy secret", () => webhook.secret ?? "", { shown: secret, said: session.notify }),
    ];
    if (!("schedule" in webhook)) {
      const address = el("code", { class: "secret" }, webhook.email);
      parts.push(
        el("p", {}, "Mail sent to this address is posted to the URL:"),
        el("p", {}, address),
        copyButton("Copy address", () => webhook.email, { shown: address, said: session.notify }),
      );
    }
    made.replaceChildren(...parts);
    made.hidden = false;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const extra = headers.forCreate();
    if ("error" in extra) return session.notify(extra.error);
    /** @type {NewWebhook} */
    const body = { webhookId: id.value.trim(), url: url.value.trim(), headers: extra.patch.headers };
    if (schedule.checked) {
      body.schedule = { cron: cron.value.trim(), timezone: zone.value.trim() };
    } else {
      const fields = mailbox.forCreate();
      if ("error" in fields) return session.notify(fields.error);
      Object.assign(body, fields.patch);
    }
    const { data, error, response } = await session.client.POST("/webhook", { body });
    if (!session.answered(response, error) || !data) return;
    showOnce(data);
    list.made({ ...data, secret: undefined });
    session.charged(`Webhook ${data.webhookId} created.`);
  });
}
