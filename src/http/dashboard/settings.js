// @ts-check
/// <reference lib="dom" />
// The low-balance alert panel (charged: 1 credit to load, 1 to save): the threshold and the email
// address. A configured alert webhook is shown, and then saving is left to the API: its header
// values come back redacted, so the page could not send them back unchanged.
import { byId } from "./view.js";
import { priceLabel, PRICES } from "./prices.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["CustomerSettings"]} Settings */

/** @param {Session} session */
export function settingsPanel(session) {
  const form = /** @type {HTMLFormElement} */ (byId("settings-form"));
  const threshold = /** @type {HTMLInputElement} */ (byId("settings-threshold"));
  const email = /** @type {HTMLInputElement} */ (byId("settings-email"));
  const webhookNote = byId("settings-webhook");
  const save = /** @type {HTMLButtonElement} */ (byId("settings-save"));
  const load = byId("settings-load");
  load.textContent = `Load settings (${priceLabel(PRICES.settings)})`;
  save.textContent = `Save (${priceLabel(PRICES.settings)})`;

  function show(/** @type {Settings} */ settings) {
    threshold.value = String(settings.low_balance_threshold);
    email.value = settings.low_balance_email ?? "";
    const hook = settings.low_balance_webhook;
    // Alerts go to an email address only once its owner opened the link mailed to it.
    const unconfirmed = settings.low_balance_email && settings.low_balance_email_confirmed === false
      ? ` No alert goes to ${settings.low_balance_email} until it is confirmed from the link mailed to it.`
      : "";
    webhookNote.textContent =
      (hook
        ? `Alerts also go to the webhook ${hook.url}. Its header values are hidden here, so change these ` +
          "settings through PUT /token/settings to keep them."
        : "No alert webhook: alerts go by email only (0 turns alerts off).") + unconfirmed;
    save.disabled = hook !== undefined;
    form.hidden = false;
  }

  async function fetchSettings() {
    const { data, error, response } = await session.client.GET("/token/settings");
    if (!session.answered(response, error) || !data) return;
    show(data);
    session.charged("Alert settings loaded.");
  }

  async function store(/** @type {SubmitEvent} */ event) {
    event.preventDefault();
    const low_balance_threshold = Number(threshold.value || "0");
    const address = email.value.trim();
    const { error, response } = await session.client.PUT("/token/settings", {
      body: { low_balance_threshold, low_balance_email: address === "" ? null : address },
      parseAs: "text",
    });
    if (session.answered(response, error)) session.charged("Alert settings saved.");
  }

  load.addEventListener("click", fetchSettings);
  form.addEventListener("submit", store);
}
