// @ts-check
/// <reference lib="dom" />
// The ledger panel (free): /token/ledger a page at a time, newest first; Older follows nextCursor,
// Newer goes back through the cursors already seen.
import { byId, cell, count, el, fillRows, utcTime } from "./view.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["LedgerEntry"]} LedgerEntry */

const PAGE_SIZE = "10";

/** @param {Session} session */
export function ledgerPanel(session) {
  const table = /** @type {HTMLTableElement} */ (byId("ledger-table"));
  const newer = /** @type {HTMLButtonElement} */ (byId("ledger-newer"));
  const older = /** @type {HTMLButtonElement} */ (byId("ledger-older"));
  const pageLabel = byId("ledger-page");
  /** The cursor of each page shown so far: undefined for the newest. */
  /** @type {(string | undefined)[]} */
  let cursors = [undefined];
  /** @type {string | null} */
  let next = null;

  const row = (/** @type {LedgerEntry} */ entry) =>
    el(
      "tr",
      {},
      cell(utcTime(entry.at)),
      cell(entry.type),
      cell((entry.amount > 0 ? "+" : "") + count(entry.amount), `num ${entry.amount < 0 ? "out" : "in"}`),
      cell(count(entry.balance), "num"),
      cell(entry.endpoint ?? ""),
      cell(entry.ref),
    );

  /** Shows page `index` (0: the newest), reached with `cursor`; on a refusal the page stays. */
  async function show(/** @type {number} */ index, /** @type {string | undefined} */ cursor) {
    const { data, error, response } = await session.client.GET("/token/ledger", {
      params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } },
    });
    if (!session.answered(response, error) || !data) return false;
    cursors = [...cursors.slice(0, index), cursor];
    next = data.nextCursor;
    fillRows(table, data.entries.map(row), "No movements in this range");
    pageLabel.textContent = `Page ${index + 1}`;
    newer.disabled = index === 0;
    older.disabled = next === null;
    return true;
  }

  older.addEventListener("click", () => next !== null && show(cursors.length, next));
  newer.addEventListener("click", () => show(cursors.length - 2, cursors[cursors.length - 2]));
  return { load: () => show(0, undefined) };
}
