// @ts-check
/// <reference lib="dom" />
// The new-webhook form (1 credit): a mailbox (mail to its address is posted to the URL, as is or in a
// chat format with its options) or a schedule (cron and time zone). The signing secret and the
// mailbox address are shown once, at creation, with copy buttons.
import { byId, copyButton, el } from "./view.js";
import { priceLabel, PRICES } from "./prices.js";
import { schedulePreview } from "./schedule_preview.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["Webhook"]} Webhook */
/** @typedef {import("./api.js").paths["/webhook"]["post"]["requestBody"]["content"]["application/json"]} NewWebhook */
/** @typedef {NonNullable<NewWebhook["format"]>} Format */

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
  const format = /** @type {HTMLSelectElement} */ (byId("wh-format"));
  const options = /** @type {HTMLTextAreaElement} */ (byId("wh-options"));
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
    /** @type {NewWebhook} */
    const body = { webhookId: id.value.trim(), url: url.value.trim() };
    if (schedule.checked) {
      body.schedule = { cron: cron.value.trim(), timezone: zone.value.trim() };
    } else {
      const parsed = optionsOf(options.value);
      if ("error" in parsed) return session.notify(/** @type {string} */ (parsed.error));
      if (format.value) body.format = /** @type {Format} */ (format.value);
      if (Object.keys(parsed.options ?? {}).length > 0) body.options = parsed.options;
    }
    const { data, error, response } = await session.client.POST("/webhook", { body });
    if (!session.answered(response, error) || !data) return;
    showOnce(data);
    list.made({ ...data, secret: undefined });
    session.charged(`Webhook ${data.webhookId} created.`);
  });
}
