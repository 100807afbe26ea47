// @ts-check
/// <reference lib="dom" />
// A webhook card's actions, each 1 credit: test (the result shown), pause and resume, edit (its URL
// and headers, a schedule's cron and zone, a mailbox's format, options, template and attachments;
// only what changed is sent), and delete after a confirmation.
import { el } from "./view.js";
import { priceLabel, PRICES } from "./prices.js";
import { headerRows, mailboxSettings } from "./webhook_form.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["Webhook"]} Webhook */
/** @typedef {import("./api.js").paths["/webhook/{webhookId}"]["patch"]["requestBody"]["content"]["application/json"]} Patch */

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
    /** @type {Patch} */ body,
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
  const idOf = (/** @type {string} */ name) => `edit-${name}-${id}`;
  const mailbox = "schedule" in webhook ? undefined : mailboxSettings(idOf, webhook);
  const headers = headerRows(idOf, webhook.headers);
  editor.append(
    ...url.nodes,
    ...(cron?.nodes ?? []),
    ...(zone?.nodes ?? []),
    ...(mailbox?.nodes ?? []),
    ...headers.nodes,
    el("button", { type: "submit" }, `Save changes (${PRICE})`),
  );
  editor.addEventListener("submit", (event) => {
    event.preventDefault();
    const parts = [headers.changes(), mailbox?.changes() ?? { patch: {} }];
    const refused = parts.find((part) => "error" in part);
    if (refused && "error" in refused) return session.notify(refused.error);
    /** @type {Patch} */
    const body = Object.assign({}, ...parts.map((part) => "patch" in part ? part.patch : {}));
    if (url.input.value.trim() !== webhook.webhook) body.url = url.input.value.trim();
    if (cron && zone && "schedule" in webhook) {
      const next = { cron: cron.input.value.trim(), timezone: zone.input.value.trim() };
      if (next.cron !== webhook.schedule.cron || next.timezone !== webhook.schedule.timezone) {
        body.schedule = next;
      }
    }
    if (Object.keys(body).length === 0) return session.notify(`Nothing changed in ${id}: nothing sent.`);
    patch(body, `${id} saved.`);
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
