// @ts-check
/// <reference lib="dom" />
// Small DOM helpers shared by the panels: elements built from data (never from HTML strings, so
// nothing the service answers can run as markup), times in UTC and numbers with separators.

/**
 * @param {string} tag
 * @param {Record<string, string>} [attributes]
 * @param {(Node | string)[]} children
 */
export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

/** A table cell; `className` aligns numbers or colours amounts. */
export function cell(/** @type {string | number} */ value, className = "") {
  return el("td", className ? { class: className } : {}, String(value));
}

/** `2027-03-01 12:00:05` from an ISO time, in UTC like the usage days. */
export function utcTime(/** @type {string} */ iso) {
  return iso.replace("T", " ").replace(/\.\d+Z$|Z$/, "");
}

export function count(/** @type {number} */ n) {
  return n.toLocaleString("en-US");
}

/** Replaces a table body's rows, or shows one row saying there is nothing. */
export function fillRows(
  /** @type {HTMLTableElement} */ table,
  /** @type {HTMLElement[]} */ rows,
  empty = "Nothing yet",
) {
  const body = table.tBodies[0];
  const columns = table.tHead?.rows[0]?.cells.length ?? 1;
  body.replaceChildren(...rows);
  if (rows.length === 0) body.append(el("tr", {}, el("td", { colspan: String(columns) }, empty)));
}

/** @param {string} id */
export function byId(id) {
  const found = document.getElementById(id);
  if (!found) throw new Error(`No element #${id}`);
  return found;
}

/**
 * A button that copies `text()` to the clipboard and says so in `said`; where the browser refuses,
 * it selects `shown` so the user can copy it by hand.
 * @param {string} label
 * @param {() => string} text
 * @param {{ shown: HTMLElement, said: (message: string) => void }} where
 */
export function copyButton(label, text, where) {
  const button = el("button", { type: "button", class: "secondary" }, label);
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text());
      where.said("Copied to the clipboard.");
    } catch {
      getSelection()?.selectAllChildren(where.shown);
      where.said("The browser did not allow copying: the text is selected, copy it with your keys.");
    }
  });
  return button;
}
