// @ts-check
/// <reference lib="dom" />
// The webhooks panel (charged: 1 credit a call), loaded only when asked: each webhook's card with its
// mailbox address (and a copy button) or schedule, its state, its actions and its deliveries.
import { byId, copyButton, el, utcTime } from "./view.js";
import { showDeliveries } from "./deliveries.js";
import { webhookActions } from "./webhook_actions.js";
import { webhookForm } from "./webhook_form.js";
import { priceLabel, PRICES } from "./prices.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["Webhook"]} Webhook */

/** The facts a webhook card lists besides its URL. */
function facts(/** @type {Webhook} */ webhook) {
  const reason = webhook.pausedReason ? ` (${webhook.pausedReason})` : "";
  if ("schedule" in webhook) {
    const s = webhook.schedule;
    const last = s.lastStatus ? `${s.lastStatus}${s.lastError ? ` (${s.lastError})` : ""}` : "not run yet";
    return [
      ["Schedule", `${s.cron} (${s.timezone})`],
      ["State", s.active ? "active" : `paused${reason}`],
      ["Next run", s.nextRunAt ? `${utcTime(s.nextRunAt)} UTC` : "none planned"],
      ["Last run", s.lastRunAt ? `${utcTime(s.lastRunAt)} UTC: ${last}` : last],
    ];
  }
  return [
    ["Mailbox", webhook.email],
    ["State", webhook.active === false ? `paused${reason}` : "active"],
    ["Format", webhook.format ?? "email payload as is"],
  ];
}

/** Whether the webhook runs or takes deliveries now. */
export function isActive(/** @type {Webhook} */ webhook) {
  return "schedule" in webhook ? webhook.schedule.active : webhook.active !== false;
}

/** A webhook's card: facts, actions, and its deliveries on request. */
export function webhookCard(/** @type {Session} */ session, /** @type {Webhook} */ webhook) {
  const area = el("div", { class: "deliveries", "aria-live": "polite" });
  const button = el(
    "button",
    { type: "button", class: "secondary" },
    `Deliveries (${priceLabel(PRICES.webhook)})`,
  );
  button.addEventListener("click", () => showDeliveries(session, webhook, area));
  const rows = [["URL", webhook.webhook], ...facts(webhook)];
  const list = el("dl", {}, ...rows.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));
  const card = el("li", { "data-webhook": webhook.webhookId }, el("h3", {}, webhook.webhookId), list);
  if (!("schedule" in webhook)) {
    const address = /** @type {HTMLElement} */ (list.querySelectorAll("dd")[1]);
    card.append(copyButton("Copy mailbox address", () => webhook.email, {
      shown: address,
      said: (message) => session.notify(message),
    }));
  }
  card.append(
    webhookActions(session, webhook, {
      replace: (next) => card.replaceWith(webhookCard(session, next)),
      remove: () => card.remove(),
    }),
    button,
    area,
  );
  return card;
}

/** @param {Session} session */
export function webhooksPanel(session) {
  const list = byId("webhooks-list");
  const load = /** @type {HTMLButtonElement} */ (byId("webhooks-load"));
  load.textContent = `Load webhooks (${priceLabel(PRICES.webhook)})`;
  load.addEventListener("click", async () => {
    const { data, error, response } = await session.client.GET("/webhook");
    if (!session.answered(response, error) || !data) return;
    list.replaceChildren(...data.webhooks.map((webhook) => webhookCard(session, webhook)));
    if (data.webhooks.length === 0) list.append(el("li", {}, "No webhooks yet."));
    session.charged(`${data.webhooks.length} webhook(s).`);
  });
  webhookForm(session, {
    made(webhook) {
      for (const empty of list.querySelectorAll("li:not([data-webhook])")) empty.remove();
      list.append(webhookCard(session, webhook));
    },
  });
}
