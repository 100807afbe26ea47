// @ts-check
/// <reference lib="dom" />
// A webhook's recent deliveries with a redeliver button: both calls are charged 1 credit, so they
// are made only when asked, through the typed client like every other call of the page.
import { el, utcTime } from "./view.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["Webhook"]} Webhook */
/** @typedef {import("./api.js").schemas["Delivery"]} Delivery */

const RECENT_DELIVERIES = 5;

/** The last attempt's answer in a few words. */
function lastOutcome(/** @type {Delivery} */ delivery) {
  const last = delivery.attempts.at(-1);
  if (!last) return "no attempt yet";
  return `${last.statusCode ?? "no answer"}${last.error ? `, ${last.error}` : ""}`;
}

/**
 * @param {Session} session
 * @param {Webhook} webhook
 * @param {Delivery} delivery
 */
function deliveryItem(session, webhook, delivery) {
  const when = `${utcTime(delivery.createdAt)} UTC`;
  const attempts = `${delivery.attempts.length} attempt(s), last ${lastOutcome(delivery)}`;
  const summary = `${when} ${delivery.kind}: ${delivery.status} after ${attempts} `;
  // The service sends a test once: a new one is another test call, not a redelivery.
  if (delivery.kind === "test") return el("li", {}, summary);
  const redeliver = el("button", { type: "button", class: "secondary" }, "Redeliver (1 credit)");
  redeliver.addEventListener("click", async () => {
    const { data, error, response } = await session.client.POST(
      "/webhook/{webhookId}/deliveries/{deliveryId}/retry",
      { params: { path: { webhookId: webhook.webhookId, deliveryId: delivery.deliveryId } } },
    );
    if (session.answered(response, error) && data) {
      session.notify(`Delivery ${data.deliveryId} queued again: ${data.status}.`);
    }
  });
  return el("li", {}, summary, redeliver);
}

/** Loads a webhook's recent deliveries into `area`. */
export async function showDeliveries(
  /** @type {Session} */ session,
  /** @type {Webhook} */ webhook,
  /** @type {HTMLElement} */ area,
) {
  const { data, error, response } = await session.client.GET("/webhook/{webhookId}/deliveries", {
    params: { path: { webhookId: webhook.webhookId }, query: { limit: String(RECENT_DELIVERIES) } },
  });
  if (!session.answered(response, error) || !data) return;
  area.replaceChildren(
    data.deliveries.length === 0
      ? el("p", { class: "hint" }, "No deliveries in the last 7 days.")
      : el("ul", {}, ...data.deliveries.map((d) => deliveryItem(session, webhook, d))),
  );
}
