// @ts-check
/// <reference lib="dom" />
// The scoped keys panel (1 credit a call): make a key (scope, buckets, spend cap, expiry) whose secret
// is shown once, list the keys with their spend and last use, revoke one.
import { byId, cell, copyButton, el, fillRows, utcTime } from "./view.js";
import { priceLabel, PRICES } from "./prices.js";

/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").schemas["ScopedKey"]} ScopedKey */
/** @typedef {import("./api.js").paths["/token/keys"]["post"]["requestBody"]["content"]["application/json"]} NewKey */

const PRICE = priceLabel(PRICES.keys);
const DAY_MS = 24 * 3600 * 1000;

/** @param {Session} session */
export function keysPanel(session) {
  const form = /** @type {HTMLFormElement} */ (byId("keys-form"));
  const name = /** @type {HTMLInputElement} */ (byId("key-name"));
  const scope = /** @type {HTMLSelectElement} */ (byId("key-scope"));
  const buckets = /** @type {HTMLInputElement} */ (byId("key-buckets"));
  const cap = /** @type {HTMLInputElement} */ (byId("key-cap"));
  const days = /** @type {HTMLInputElement} */ (byId("key-days"));
  const table = /** @type {HTMLTableElement} */ (byId("keys-table"));
  const made = byId("key-made");
  const load = /** @type {HTMLButtonElement} */ (byId("keys-load"));
  load.textContent = `List keys (${PRICE})`;
  byId("key-create").textContent = `Create key (${PRICE})`;

  async function revoke(/** @type {ScopedKey} */ key, /** @type {HTMLElement} */ where) {
    const { error, response } = await session.client.DELETE("/token/keys/{id}", {
      params: { path: { id: key.id } },
      parseAs: "text",
    });
    if (!session.answered(response, error)) return;
    where.replaceChildren("revoked");
    session.charged(`Key ${key.name} revoked: its next call gets 401.`);
  }

  function row(/** @type {ScopedKey} */ key) {
    const spend = key.spendCap === undefined ? `${key.spent}` : `${key.spent} of ${key.spendCap}`;
    const action = el("td", {});
    if (key.state === "active") {
      const button = el("button", { type: "button", class: "secondary" }, `Revoke ${key.name} (${PRICE})`);
      button.addEventListener("click", () => revoke(key, action));
      action.append(button);
    }
    return el(
      "tr",
      { "data-key": key.id },
      cell(key.name),
      cell(key.scope),
      cell(key.buckets?.join(", ") ?? "all"),
      cell(spend, "num"),
      cell(key.lastUsedAt ? `${utcTime(key.lastUsedAt)} UTC` : "never"),
      cell(key.expiresAt ? `${key.state}, until ${utcTime(key.expiresAt)} UTC` : key.state),
      action,
    );
  }

  load.addEventListener("click", async () => {
    const { data, error, response } = await session.client.GET("/token/keys");
    if (!session.answered(response, error) || !data) return;
    fillRows(table, data.keys.map(row), "No keys yet.");
    session.charged(`${data.keys.length} key(s).`);
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    /** @type {NewKey} */
    const body = { name: name.value.trim(), scope: scope.value === "write" ? "write" : "read" };
    const names = buckets.value.split(",").map((b) => b.trim()).filter(Boolean);
    if (names.length > 0) body.buckets = names;
    if (cap.value !== "") body.spendCap = Number(cap.value);
    if (days.value !== "") body.expiresAt = new Date(Date.now() + Number(days.value) * DAY_MS).toISOString();
    const { data, error, response } = await session.client.POST("/token/keys", { body });
    if (!session.answered(response, error) || !data) return;
    const secret = el("code", { class: "secret", id: "key-made-value" }, data.key);
    made.replaceChildren(
      el("p", {}, el("strong", {}, `Key ${data.name}, shown this once (only its hash is kept):`)),
      el("p", {}, secret),
      copyButton("Copy key", () => data.key, { shown: secret, said: session.notify }),
    );
    made.hidden = false;
    session.charged(`Key ${data.name} created.`);
  });
}
