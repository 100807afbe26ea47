// @ts-check
/// <reference lib="dom" />
// The webhooks panel (charged: 1 credit), loaded only when asked: each webhook's mailbox address or
// schedule and its state, and on request its recent deliveries.
import { byId, el, utcTime } from "./view.js";
import { showDeliveries } from "./deliveries.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["Webhook"]} Webhook */

/** The facts a webhook card lists besides its URL. */
function facts(/** @type {Webhook} */ webhook) {
  if ("schedule" in webhook) {
    const s = webhook.schedule;
    const last = s.lastStatus ? `${s.lastStatus}${s.lastError ? ` (${s.lastError})` : ""}` : "not run yet";
    return [
      ["Schedule", `${s.cron} (${s.timezone})`],
      ["State", s.active ? "active" : "paused"],
      ["Next run", s.nextRunAt ? `${utcTime(s.nextRunAt)} UTC` : "none planned"],
      ["Last run", s.lastRunAt ? `${utcTime(s.lastRunAt)} UTC: ${last}` : last],
    ];
  }
  // Mailbox webhooks gain `active` and `pausedReason` with issue 13.
  const paused = /** @type {{ active?: boolean, pausedReason?: string }} */ (webhook);
  const reason = paused.pausedReason ? ` (${paused.pausedReason})` : "";
  return [
    ["Mailbox", webhook.email],
    ["State", paused.active === false ? `paused${reason}` : "active"],
    ["Format", webhook.format ?? "email payload as is"],
  ];
}

function webhookItem(/** @type {Session} */ session, /** @type {Webhook} */ webhook) {
  const area = el("div", { "aria-live": "polite" });
  const button = el("button", { type: "button", class: "secondary" }, "Recent deliveries (1 credit)");
  button.addEventListener("click", () => showDeliveries(session, webhook, area));
  const rows = [["URL", webhook.webhook], ...facts(webhook)];
  return el(
    "li",
    {},
    el("h3", {}, webhook.webhookId),
    el("dl", {}, ...rows.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)])),
    button,
    area,
  );
}

/** @param {Session} session */
export function webhooksPanel(session) {
  const list = byId("webhooks-list");
  byId("webhooks-load").addEventListener("click", async () => {
    const { data, error, response } = await session.client.GET("/webhook");
    if (!session.answered(response, error) || !data) return;
    list.replaceChildren(...data.webhooks.map((webhook) => webhookItem(session, webhook)));
    if (data.webhooks.length === 0) list.append(el("li", {}, "No webhooks yet."));
  });
}
