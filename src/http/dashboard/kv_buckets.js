// @ts-check
/// <reference lib="dom" />
// The key-value browser's buckets (GET /kv, 1 credit a page, the wallet token only): the names of
// the buckets that hold a live key, a cursor page at a time; a name lists its keys.
import { byId, el } from "./view.js";
import { priceLabel, PRICES } from "./prices.js";

/** @typedef {import("./api.js").Session} Session */

/** @param {Session} session */
export function kvBucketsPanel(session) {
  const load = byId("kv-buckets-load");
  const more = /** @type {HTMLButtonElement} */ (byId("kv-buckets-more"));
  const list = byId("kv-buckets");
  const bucket = /** @type {HTMLInputElement} */ (byId("kv-bucket"));
  const listing = /** @type {HTMLFormElement} */ (byId("kv-list-form"));
  const price = priceLabel(PRICES.kv);
  load.textContent = `List buckets (${price})`;
  more.textContent = `More buckets (${price})`;
  /** @type {string | null} */
  let next = null;

  async function page(/** @type {boolean} */ first) {
    const { data, error, response } = await session.client.GET("/kv", {
      params: { query: first || next === null ? {} : { cursor: next } },
    });
    if (!session.answered(response, error) || !data) return;
    if (first) list.replaceChildren();
    list.append(...data.buckets.map((name) => {
      const open = el("button", { type: "button", class: "secondary" }, `${name} (${price})`);
      open.addEventListener("click", () => {
        bucket.value = name;
        listing.requestSubmit();
      });
      return el("li", {}, open);
    }));
    if (list.childElementCount === 0) list.append(el("li", {}, "No bucket holds a live key."));
    next = data.nextCursor;
    more.hidden = next === null;
    session.charged(`${data.buckets.length} bucket(s).`);
  }

  load.addEventListener("click", () => page(true));
  more.addEventListener("click", () => page(false));
}
