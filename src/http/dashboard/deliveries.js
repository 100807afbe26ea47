// @ts-check
/// <reference lib="dom" />
// A webhook's deliveries (1 credit a page of 10, newest first, filtered by status if asked), held
// ones included, each with its attempts, its payload on request (1 credit: the body sent, or the one
// that will be sent), a retry (1 credit), and a recover of the failed ones of the last week (1 credit). Payloads are shown as text, never as markup.
import { el, utcTime } from "./view.js";
import { priceLabel, PRICES } from "./prices.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["Webhook"]} Webhook */
/** @typedef {import("./api.js").schemas["Delivery"]} Delivery */
/** @typedef {import("./api.js").schemas["DeliveryAttempt"]} Attempt */

const RECENT_DELIVERIES = 10;
const PRICE = priceLabel(PRICES.webhook);
/** Recover looks back at most 7 days; a minute less, so the window is never refused as too old. */
const RECOVER_WINDOW_MS = 7 * 24 * 3600 * 1000 - 60_000;

const STATUS_WORDS = /** @type {const} */ ({
  pending: "pending",
  delivered: "delivered",
  failed: "failed",
  abandoned: "abandoned",
  paused: "held: its webhook is paused",
});

function attemptLine(/** @type {Attempt} */ attempt) {
  const answer = attempt.statusCode ?? "no answer";
  const error = attempt.error ? `, ${attempt.error}` : "";
  return el("li", {}, `${utcTime(attempt.at)} UTC: ${answer} in ${attempt.latencyMs} ms${error}`);
}

/**
 * @param {Session} session
 * @param {Webhook} webhook
 * @param {Delivery} delivery
 */
function deliveryItem(session, webhook, delivery) {
  const path = { webhookId: webhook.webhookId, deliveryId: delivery.deliveryId };
  const attempts = delivery.attempts.length === 0
    ? el("p", { class: "hint" }, "No attempt yet.")
    : el("ol", { class: "attempts" }, ...delivery.attempts.map(attemptLine));
  const payload = el("pre", { class: "payload", hidden: "", tabindex: "0" });
  const show = el("button", { type: "button", class: "secondary" }, `Payload (${PRICE})`);
  show.addEventListener("click", async () => {
    const { data, error, response } = await session.client.GET(
      "/webhook/{webhookId}/deliveries/{deliveryId}",
      { params: { path } },
    );
    if (!session.answered(response, error) || !data) return;
    const when = data.payloadSent === false ? "To be sent" : "As sent";
    payload.textContent = `${when}:\n${JSON.stringify(data.payload, null, 2)}`;
    payload.hidden = false;
    session.charged(`Payload of ${delivery.deliveryId}.`);
  });
  const buttons = el("div", { class: "controls" }, show);
  // The service sends a test once: a new one is another test call, not a retry.
  if (delivery.kind !== "test") {
    const retry = el("button", { type: "button", class: "secondary" }, `Retry (${PRICE})`);
    retry.addEventListener("click", async () => {
      const { data, error, response } = await session.client.POST(
        "/webhook/{webhookId}/deliveries/{deliveryId}/retry",
        { params: { path } },
      );
      if (session.answered(response, error) && data) {
        session.charged(`Delivery ${data.deliveryId} queued again: ${data.status}.`);
      }
    });
    buttons.append(retry);
  }
  const summary = `${utcTime(delivery.createdAt)} UTC ${delivery.kind}: ${STATUS_WORDS[delivery.status]}, ` +
    `${delivery.attempts.length} attempt(s)`;
  const item = { "data-status": delivery.status, "data-delivery": delivery.deliveryId };
  return el("li", item, el("p", {}, summary), attempts, buttons, payload);
}

/** Sends again the webhook's failed and abandoned deliveries of the last 7 days. */
async function recover(/** @type {Session} */ session, /** @type {Webhook} */ webhook) {
  const since = new Date(Date.now() - RECOVER_WINDOW_MS).toISOString();
  const { data, error, response } = await session.client.POST("/webhook/{webhookId}/recover", {
    params: { path: { webhookId: webhook.webhookId } },
    body: { since },
  });
  if (session.answered(response, error) && data) {
    session.charged(`${data.queued} failed deliveries of ${webhook.webhookId} queued again.`);
  }
}

/** The statuses GET /webhook/{id}/deliveries filters by; "" is all of them. */
const STATUS_FILTERS = /** @type {const} */ (["", "pending", "delivered", "failed", "abandoned", "paused"]);

/**
 * Shows a webhook's deliveries in `area`, newest first, in pages of 10 (the API's cursor), with a
 * status filter; each page is a call (1 credit), the first loaded at once.
 */
export async function showDeliveries(
  /** @type {Session} */ session,
  /** @type {Webhook} */ webhook,
  /** @type {HTMLElement} */ area,
) {
  const id = webhook.webhookId;
  const status = /** @type {HTMLSelectElement} */ (el(
    "select",
    { id: `deliveries-status-${id}` },
    ...STATUS_FILTERS.map((value) => el("option", { value }, value ? STATUS_WORDS[value] : "any status")),
  ));
  const button = (
    /** @type {string} */ label,
  ) => /** @type {HTMLButtonElement} */ (el(
    "button",
    { type: "button", class: "secondary" },
    `${label} (${PRICE})`,
  ));
  const show = button("Show");
  const newer = button("Newer");
  const older = button("Older");
  const again = button("Recover failed, last 7 days");
  const list = el("div", {});
  const where = el("p", { class: "hint" });
  /** The cursor of each page seen: the first has none. */
  let cursors = /** @type {(string | undefined)[]} */ ([undefined]);
  let page = 0;

  async function load(/** @type {number} */ index) {
    const filter = /** @type {Delivery["status"] | ""} */ (status.value);
    const cursor = cursors[index];
    const { data, error, response } = await session.client.GET("/webhook/{webhookId}/deliveries", {
      params: {
        path: { webhookId: id },
        query: {
          limit: String(RECENT_DELIVERIES),
          ...(cursor ? { cursor } : {}),
          ...(filter ? { status: filter } : {}),
        },
      },
    });
    if (!session.answered(response, error) || !data) return;
    page = index;
    cursors = cursors.slice(0, index + 1);
    if (data.nextCursor) cursors.push(data.nextCursor);
    const which = filter ? `${filter} ` : "";
    list.replaceChildren(
      data.deliveries.length === 0
        ? el(
          "p",
          { class: "hint" },
          `No ${which}deliveries${index > 0 ? " older than these" : " in the last 7 days"}.`,
        )
        : el(
          "ul",
          { class: "delivery-list" },
          ...data.deliveries.map((d) => deliveryItem(session, webhook, d)),
        ),
    );
    newer.hidden = index === 0;
    older.hidden = !data.nextCursor;
    where.textContent = `Page ${index + 1}, newest first.`;
    const age = index === 0 ? "recent" : "older";
    session.charged(
      `${data.deliveries.length} ${age} ${which}deliveries of ${id}${
        index > 0 ? `, page ${index + 1}` : ""
      }.`,
    );
  }

  show.addEventListener("click", () => {
    cursors = [undefined];
    load(0);
  });
  newer.addEventListener("click", () => load(page - 1));
  older.addEventListener("click", () => load(page + 1));
  again.addEventListener("click", () => recover(session, webhook));
  newer.hidden = true;
  older.hidden = true;
  area.replaceChildren(
    el(
      "div",
      { class: "controls" },
      el("label", { for: status.id }, "Status"),
      status,
      show,
    ),
    list,
    el("div", { class: "controls" }, where, newer, older),
    again,
  );
  await load(0);
}
