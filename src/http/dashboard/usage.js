// @ts-check
/// <reference lib="dom" />
// The usage panel (free): 30 days of /token/usage as a chart by endpoint type, a legend with each
// type's total, and the same data as a CSV download.
import { byId, count, el } from "./view.js";
import { drawUsageChart, TYPES } from "./chart.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./chart.js").UsageDay} UsageDay */
/** @typedef {import("./chart.js").Metric} Metric */

const DAYS = "30";

/** @param {Session} session */
export function usagePanel(session) {
  const chart = byId("usage-chart");
  const legend = byId("usage-legend");
  const total = byId("usage-total");
  const metric = /** @type {HTMLSelectElement} */ (byId("usage-metric"));
  /** @type {UsageDay[]} */
  let days = [];

  function draw() {
    const chosen = /** @type {Metric} */ (metric.value);
    const drawn = drawUsageChart(chart, days, chosen);
    const types = [...TYPES, ...[...drawn.totals.keys()].filter((t) => !TYPES.includes(t))];
    legend.replaceChildren(...types.map((type) =>
      el(
        "li",
        {},
        el("span", { class: `swatch t-${TYPES.includes(type) ? type : "other"}`, "aria-hidden": "true" }),
        `${type}: ${count(drawn.totals.get(type) ?? 0)}`,
      )
    ));
    total.textContent = `${count(drawn.total)} ${chosen} in the last ${days.length} days (UTC).`;
  }

  async function load() {
    const { data, error, response } = await session.client.GET("/token/usage", {
      params: { query: { days: DAYS } },
    });
    // The document offers JSON or CSV; without Accept: text/csv the answer is JSON.
    if (!session.answered(response, error) || typeof data !== "object") return false;
    days = data.days;
    draw();
    return true;
  }

  async function downloadCsv() {
    const { data, error, response } = await session.client.GET("/token/usage", {
      params: { query: { days: DAYS, format: "csv" } },
      parseAs: "text",
    });
    if (!session.answered(response, error) || data === undefined) return;
    const link = el("a", {
      href: URL.createObjectURL(new Blob([String(data)], { type: "text/csv" })),
      download: `usage-${new Date().toISOString().slice(0, 10)}.csv`,
    });
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.getAttribute("href") ?? ""), 10_000);
  }

  metric.addEventListener("change", draw);
  // Redrawn at the new width when the window changes size (a phone turned), once it settles.
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let resizing;
  addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => days.length > 0 && draw(), 150);
  });
  byId("usage-csv").addEventListener("click", downloadCsv);
  return { load };
}
