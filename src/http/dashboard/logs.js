// @ts-check
/// <reference lib="dom" />
// The call-log panel (charged: 1 credit per entry returned), loaded only when asked, with the
// endpoint type filter and the number of entries, whose cost the button states. The page's own free
// views (ledger, usage, recharge links, schedule preview) are left out unless asked for.
import { byId, cell, count, el, fillRows, utcTime } from "./view.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {NonNullable<import("./api.js").paths["/token/logs"]["get"]["parameters"]["query"]>["type"]} LogType */

/** @param {Session} session */
export function logsPanel(session) {
  const table = /** @type {HTMLTableElement} */ (byId("logs-table"));
  const type = /** @type {HTMLSelectElement} */ (byId("logs-type"));
  const entries = /** @type {HTMLSelectElement} */ (byId("logs-n"));
  const button = /** @type {HTMLButtonElement} */ (byId("logs-load"));
  const views = /** @type {HTMLInputElement} */ (byId("logs-views"));

  const label = () => {
    button.textContent = `Load logs (up to ${entries.value} credits)`;
  };

  async function load() {
    const chosen = /** @type {LogType} */ (type.value || undefined);
    const { data, error, response } = await session.client.GET("/token/logs", {
      params: {
        query: {
          n: entries.value,
          ...(chosen ? { type: chosen } : {}),
          ...(views.checked ? { views: "include" } : {}),
        },
      },
    });
    if (!session.answered(response, error) || !data) return;
    const rows = data.logs.map((log) =>
      el(
        "tr",
        {},
        cell(utcTime(log.timestamp)),
        cell(log.endpoint),
        cell(`${log.method} ${log.path}`, "wrap"),
        cell(log.status_code, "num"),
        cell(count(log.cost), "num"),
        cell(count(log.balance), "num"),
        cell(log.error ?? "", "wrap"),
      )
    );
    fillRows(table, rows, chosen ? `No ${chosen} calls in the last 7 days` : "No calls in the last 7 days");
  }

  entries.addEventListener("change", label);
  button.addEventListener("click", load);
  label();
}
