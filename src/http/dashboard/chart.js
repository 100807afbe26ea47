// @ts-check
/// <reference lib="dom" />
// The usage chart: one stacked bar per UTC day, one colour per endpoint type, drawn as inline SVG
// from /token/usage. Each bar segment names its day, type and value in a tooltip for pointers and
// screen readers alike; the chart's description gives the totals per type.

/** @typedef {import("./api.js").schemas["UsageDay"]} UsageDay */
/** @typedef {"calls" | "credits" | "errors"} Metric */

export const TYPES = ["kv", "token", "webhook", "webhook-delivery", "email", "scheduled", "payment"];
const SVG = "http://www.w3.org/2000/svg";
/** The drawing is as wide as its box (within bounds), so its text keeps its size on a phone. */
const MIN_WIDTH = 320;
const MAX_WIDTH = 960;
const HEIGHT = 240;
const MARGIN = { top: 12, right: 8, bottom: 28, left: 48 };

/**
 * @param {string} tag
 * @param {Record<string, string | number>} attributes
 */
function svg(tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

/** A round upper bound for the axis: 1, 2 or 5 times a power of ten. */
function niceMax(/** @type {number} */ value) {
  if (value <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

const typeClass = (/** @type {string} */ type) => TYPES.includes(type) ? `t-${type}` : "t-other";

/** The total of a metric per type over the days. */
export function totalsByType(/** @type {UsageDay[]} */ days, /** @type {Metric} */ metric) {
  /** @type {Map<string, number>} */
  const totals = new Map();
  for (const day of days) {
    for (const [type, counts] of Object.entries(day.byType)) {
      totals.set(type, (totals.get(type) ?? 0) + counts[metric]);
    }
  }
  return totals;
}

/**
 * The frame of a drawing `width` wide for values up to `max`: where a value is on the y axis and
 * how wide each day's slot is.
 * @typedef {{ width: number, max: number, slot: number, y(value: number): number }} Frame
 */

/** The horizontal lines at 0, half and the top, with their values. */
function drawAxis(/** @type {SVGElement} */ root, /** @type {Frame} */ frame) {
  for (const tick of [0, frame.max / 2, frame.max]) {
    const at = frame.y(tick);
    root.append(
      svg("line", { class: "axis", x1: MARGIN.left, x2: frame.width - MARGIN.right, y1: at, y2: at }),
    );
    const label = svg("text", { x: MARGIN.left - 6, y: at + 4, "text-anchor": "end" });
    label.textContent = String(Math.round(tick * 10) / 10);
    root.append(label);
  }
}

/** One day's stacked bar, each segment with its tooltip, and the day's label now and then. */
function drawDay(
  /** @type {SVGElement} */ root,
  /** @type {Frame} */ frame,
  /** @type {{ day: UsageDay, index: number, last: boolean, metric: Metric }} */ { day, index, last, metric },
) {
  const x = MARGIN.left + index * frame.slot + frame.slot * 0.15;
  let base = 0;
  for (const type of [...TYPES, ...Object.keys(day.byType).filter((t) => !TYPES.includes(t))]) {
    const value = day.byType[type]?.[metric] ?? 0;
    if (value === 0) continue;
    const bar = svg("rect", {
      class: `bar ${typeClass(type)}`,
      x: x.toFixed(1),
      y: frame.y(base + value).toFixed(1),
      width: (frame.slot * 0.7).toFixed(1),
      height: Math.max(1, frame.y(base) - frame.y(base + value)).toFixed(1),
    });
    const tip = svg("title");
    tip.textContent = `${day.date} ${type}: ${value} ${metric}`;
    bar.append(tip);
    root.append(bar);
    base += value;
  }
  const every = frame.width < 560 ? 10 : 5;
  if (index % every !== 0 && !last) return;
  // The last label ends at its bar, so it stays inside the drawing.
  const at = last ? x + frame.slot * 0.7 : x + frame.slot * 0.35;
  const label = svg("text", { x: at.toFixed(1), y: HEIGHT - 8, "text-anchor": last ? "end" : "middle" });
  label.textContent = day.date.slice(5);
  root.append(label);
}

/**
 * Draws the chart into `container`, replacing what was there; it is as wide as the container.
 * @param {HTMLElement} container
 * @param {UsageDay[]} days oldest first
 * @param {Metric} metric
 */
export function drawUsageChart(container, days, metric) {
  const width = Math.round(Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, container.clientWidth || MAX_WIDTH)));
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const dayTotals = days.map((day) => Object.values(day.byType).reduce((sum, c) => sum + c[metric], 0));
  const max = niceMax(Math.max(0, ...dayTotals));
  const frame = {
    width,
    max,
    slot: (width - MARGIN.left - MARGIN.right) / Math.max(1, days.length),
    y: (/** @type {number} */ value) => MARGIN.top + plotHeight - (value / max) * plotHeight,
  };
  const totals = totalsByType(days, metric);
  const grand = [...totals.values()].reduce((a, b) => a + b, 0);

  const root = svg("svg", {
    viewBox: `0 0 ${width} ${HEIGHT}`,
    role: "img",
    "aria-labelledby": "chart-title chart-desc",
  });
  root.dataset.total = String(grand);
  const title = svg("title", { id: "chart-title" });
  title.textContent = `${metric} per UTC day by endpoint type, last ${days.length} days`;
  const desc = svg("desc", { id: "chart-desc" });
  desc.textContent = grand === 0
    ? `No ${metric} in these days.`
    : `${grand} ${metric} in all: ` + [...totals].map(([type, n]) => `${type} ${n}`).join(", ");
  root.append(title, desc);
  drawAxis(root, frame);
  days.forEach((day, index) => drawDay(root, frame, { day, index, last: index === days.length - 1, metric }));
  container.replaceChildren(root);
  return { total: grand, totals };
}
