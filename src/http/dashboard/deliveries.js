// @ts-check
/// <reference lib="dom" />
// A webhook's recent deliveries with a redeliver button (charged: 1 credit each call). The
// deliveries routes (issue 13) may not be on this service yet: a 404 or 405 says so.
import { el, utcTime } from "./view.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["Webhook"]} Webhook */
/**
 * A delivery as GET /webhook/{id}/deliveries describes it (issue 13). Not in /openapi.json yet, so
 * these two calls go through fetch; once the routes are there, regenerate api_types.ts and use the client.
 * @typedef {{
 *   deliveryId: string, kind: string, createdAt: string, status: string, nextAttemptAt: string | null,
 *   attempts: { at: string, statusCode: number | null, latencyMs: number, error?: string | null }[],
 * }} Delivery
 */

const RECENT_DELIVERIES = 5;
const WEBHOOK_NOT_FOUND = "Webhook not found";
export const NOT_AVAILABLE = "Delivery history is not available on this service yet.";

/** A 404 that is not about the webhook, or a 405: the route is not there. */
async function deliveriesCall(/** @type {Session} */ session, /** @type {string} */ path, init = {}) {
  const response = await fetch(path, { ...init, headers: { "x-token": session.token } });
  const text = await response.text();
  const missing = (response.status === 404 && text !== WEBHOOK_NOT_FOUND) || response.status === 405;
  if (!missing) session.answered(response, text);
  return { missing, response, text };
}

const notAvailable = () => el("p", { class: "hint" }, NOT_AVAILABLE);

/**
 * @param {Session} session
 * @param {Webhook} webhook
 * @param {Delivery} delivery
 * @param {HTMLElement} area where the deliveries are shown
 */
function deliveryItem(session, webhook, delivery, area) {
  const last = delivery.attempts.at(-1);
  const outcome = last
    ? `${last.statusCode ?? "no answer"}${last.error ? `, ${last.error}` : ""}`
    : "no attempt yet";
  const redeliver = el("button", { type: "button", class: "secondary" }, "Redeliver (1 credit)");
  redeliver.addEventListener("click", async () => {
    const path = `/webhook/${encodeURIComponent(webhook.webhookId)}/deliveries/` +
      `${encodeURIComponent(delivery.deliveryId)}/retry`;
    const { missing, response } = await deliveriesCall(session, path, { method: "POST" });
    if (missing) area.replaceChildren(notAvailable());
    else if (response.ok) session.notify(`Delivery ${delivery.deliveryId} queued again.`);
  });
  const when = `${utcTime(delivery.createdAt)} UTC`;
  const attempts = `${delivery.attempts.length} attempt(s), last ${outcome}`;
  return el("li", {}, `${when} ${delivery.kind}: ${delivery.status} after ${attempts} `, redeliver);
}

/** Loads a webhook's recent deliveries into `area`. */
export async function showDeliveries(
  /** @type {Session} */ session,
  /** @type {Webhook} */ webhook,
  /** @type {HTMLElement} */ area,
) {
  const path = `/webhook/${encodeURIComponent(webhook.webhookId)}/deliveries?limit=${RECENT_DELIVERIES}`;
  const { missing, response, text } = await deliveriesCall(session, path);
  if (missing) return area.replaceChildren(notAvailable());
  if (!response.ok) return;
  /** @type {{ deliveries: Delivery[] }} */
  const { deliveries } = JSON.parse(text);
  area.replaceChildren(
    deliveries.length === 0
      ? el("p", { class: "hint" }, "No deliveries in the last 7 days.")
      : el("ul", {}, ...deliveries.map((d) => deliveryItem(session, webhook, d, area))),
  );
}
