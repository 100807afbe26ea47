// @ts-check
/// <reference lib="dom" />
// The key-value browser's listing (1 credit a page): a bucket's live keys by prefix, with their size
// and time left, one cursor page at a time, back and forth; each key opens in the entry form, and
// the entry form has the page listed again after it creates or deletes a key of this bucket.
import { byId, cell, el, fillRows } from "./view.js";
import { sizeText, timeLeft } from "./ttl.js";
import { priceLabel, PRICES } from "./prices.js";

/** @typedef {import("./api.js").Session} Session */

/**
 * @param {Session} session
 * @param {{ open(bucket: string, key: string): void, relabel(): void }} entry the entry form a key opens
 *   in, whose prices depend on what is listed
 */
export function kvKeysPanel(session, entry) {
  const form = /** @type {HTMLFormElement} */ (byId("kv-list-form"));
  const bucket = /** @type {HTMLInputElement} */ (byId("kv-bucket"));
  const prefix = /** @type {HTMLInputElement} */ (byId("kv-prefix"));
  const limit = /** @type {HTMLSelectElement} */ (byId("kv-limit"));
  const table = /** @type {HTMLTableElement} */ (byId("kv-table"));
  const newer = /** @type {HTMLButtonElement} */ (byId("kv-previous"));
  const older = /** @type {HTMLButtonElement} */ (byId("kv-next"));
  const pageLabel = byId("kv-page");
  const price = priceLabel(PRICES.kv);
  byId("kv-list").textContent = `List keys (${price})`;
  newer.textContent = `Previous page (${price})`;
  older.textContent = `Next page (${price})`;

  /** The cursors of the pages seen: [0] is the first page's (none); the last, the next page's. */
  let cursors = /** @type {(string | undefined)[]} */ ([undefined]);
  let index = 0;
  let listed = { bucket: "", prefix: "", limit: "20" };

  /**
   * Lists page `at`; `quiet`: as part of another action, which says what it cost in all.
   * @returns {Promise<boolean>} whether it was listed
   */
  async function load(/** @type {number} */ at, quiet = false) {
    const cursor = cursors[at];
    const { data, error, response } = await session.client.GET("/kv/{bucket}", {
      params: {
        path: { bucket: listed.bucket },
        query: {
          limit: listed.limit,
          ...(listed.prefix ? { prefix: listed.prefix } : {}),
          ...(cursor ? { cursor } : {}),
        },
      },
    });
    if (!session.answered(response, error) || !data) return false;
    index = at;
    cursors = cursors.slice(0, at + 1);
    if (data.nextCursor) cursors.push(data.nextCursor);
    const now = Date.now();
    fillRows(
      table,
      data.keys.map((found) => {
        const open = el("button", { type: "button", class: "secondary" }, `Open (${price})`);
        open.addEventListener("click", () => entry.open(listed.bucket, found.key));
        return el(
          "tr",
          { "data-key": found.key },
          cell(found.key),
          cell(sizeText(found.size), "num"),
          cell(timeLeft(found.expiresAt, now)),
          el("td", {}, open),
        );
      }),
      "No live keys here.",
    );
    pageLabel.textContent = `Page ${index + 1}`;
    newer.disabled = index === 0;
    older.disabled = cursors.length <= index + 1;
    entry.relabel();
    if (!quiet) session.charged(`${data.keys.length} key(s) on page ${index + 1} of ${listed.bucket}.`);
    return true;
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    listed = { bucket: bucket.value.trim(), prefix: prefix.value, limit: limit.value };
    cursors = [undefined];
    load(0);
  });
  newer.addEventListener("click", () => load(index - 1));
  older.addEventListener("click", () => load(index + 1));

  return {
    /** Whether the keys of `name` are listed on the page. */
    shows: (/** @type {string} */ name) => listed.bucket !== "" && listed.bucket === name,
    /** Lists the page shown again (1 credit), quietly. */
    refresh: () => load(index, true),
  };
}
