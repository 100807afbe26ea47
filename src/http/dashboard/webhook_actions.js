// @ts-check
/// <reference lib="dom" />
// A webhook card's actions, each 1 credit: test (the result shown), pause and resume, edit its URL
// (and a schedule's cron and zone, a mailbox's format), and delete after a confirmation.
import { el } from "./view.js";
import { priceLabel, PRICES } from "./prices.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["Webhook"]} Webhook */

const PRICE = priceLabel(PRICES.webhook);

/** @param {string} label @param {() => void} onClick */
function action(label, onClick, secondary = true) {
  const button = el("button", { type: "button", ...(secondary ? { class: "secondary" } : {}) }, label);
  button.addEventListener("click", onClick);
  return button;
}

/** A labelled text input for the edit form. */
function field(/** @type {string} */ id, /** @type {string} */ label, /** @type {string} */ value) {
  const input = /** @type {HTMLInputElement} */ (el("input", { id, value, spellcheck: "false" }));
  return { input, nodes: [el("label", { for: id }, label), input] };
}

/** @typedef {NonNullable<import("./api.js").paths["/webhook/{webhookId}"]["patch"]["requestBody"]["content"]["application/json"]["format"]>} Format */

/** A mailbox's format, as the new-webhook form offers them ("": the email payload as is). */
function formatField(/** @type {string} */ id, /** @type {string} */ current) {
  const names = [
    ["", "the email payload as is"],
    ["slack", "Slack"],
    ["discord", "Discord"],
    ["teams", "Teams"],
    ["telegram", "Telegram"],
    ["pagerduty", "PagerDuty"],
  ];
  const options = names.map(([value, label]) =>
    el("option", { value, ...(value === current ? { selected: "" } : {}) }, label)
  );
  const select = /** @type {HTMLSelectElement} */ (el("select", { id }, ...options));
  return { select, nodes: [el("label", { for: id }, "Format"), select] };
}

/**
 * @param {Session} session
 * @param {Webhook} webhook
 * @param {{ replace(next: Webhook): void, remove(): void }} card
 */
export function webhookActions(session, webhook, card) {
  const id = webhook.webhookId;
  const path = { params: { path: { webhookId: id } } };
  const result = el("p", { class: "hint", "aria-live": "polite" });
  const scheduled = "schedule" in webhook;
  const active = scheduled ? webhook.schedule.active : webhook.active !== false;

  async function test() {
    const { data, error, response } = await session.client.POST("/webhook/{webhookId}/test", path);
    if (!session.answered(response, error) || !data) return;
    result.textContent = `Test ${data.success ? "delivered" : "failed"}: ${data.message}`;
    session.charged(`Test of ${id} ${data.success ? "delivered" : "failed"}.`);
  }

  async function patch(
    /** @type {import("./api.js").paths["/webhook/{webhookId}"]["patch"]["requestBody"]["content"]["application/json"]} */ body,
    /** @type {string} */ done,
  ) {
    const { data, error, response } = await session.client.PATCH("/webhook/{webhookId}", { ...path, body });
    if (!session.answered(response, error) || !data) return false;
    card.replace(data);
    session.charged(done);
    return true;
  }

  const pause = () =>
    patch(
      scheduled ? { schedule: { active: !active } } : { active: !active },
      `${id} ${active ? "paused" : "resumed"}.`,
    );

  const editor = el("form", { class: "settings", hidden: "" });
  const url = field(`edit-url-${id}`, "Callback URL", webhook.webhook);
  const cron = scheduled ? field(`edit-cron-${id}`, "Cron", webhook.schedule.cron) : undefined;
  const zone = scheduled ? field(`edit-zone-${id}`, "Time zone", webhook.schedule.timezone) : undefined;
  const format = scheduled ? undefined : formatField(`edit-format-${id}`, webhook.format ?? "");
  editor.append(
    ...url.nodes,
    ...(cron?.nodes ?? []),
    ...(zone?.nodes ?? []),
    ...(format?.nodes ?? []),
    el("button", { type: "submit" }, `Save changes (${PRICE})`),
  );
  editor.addEventListener("submit", (event) => {
    event.preventDefault();
    patch(
      {
        url: url.input.value.trim(),
        ...(cron && zone
          ? { schedule: { cron: cron.input.value.trim(), timezone: zone.input.value.trim() } }
          : {}),
        ...(format ? { format: /** @type {Format} */ (format.select.value) } : {}),
      },
      `${id} saved.`,
    );
  });

  const remove = action(`Delete (${PRICE})`, () => {
    remove.hidden = true;
    confirm.hidden = false;
    cancel.hidden = false;
    confirm.focus();
  });
  const confirm = action(`Really delete ${id}? (${PRICE})`, async () => {
    const { error, response } = await session.client.DELETE("/webhook/{webhookId}", {
      ...path,
      parseAs: "text",
    });
    if (!session.answered(response, error)) return;
    card.remove();
    session.charged(`${id} deleted.`);
  }, false);
  const cancel = action("Keep it", () => {
    remove.hidden = false;
    confirm.hidden = true;
    cancel.hidden = true;
    remove.focus();
  });
  confirm.hidden = true;
  cancel.hidden = true;

  return el(
    "div",
    { class: "actions" },
    el(
      "div",
      { class: "controls" },
      action(`Send a test (${PRICE})`, test),
      action(`${active ? "Pause" : "Resume"} (${PRICE})`, pause),
      action("Edit", () => {
        editor.hidden = !editor.hidden;
        if (!editor.hidden) url.input.focus();
      }),
      remove,
      confirm,
      cancel,
    ),
    editor,
    result,
  );
}
