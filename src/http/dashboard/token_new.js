// @ts-check
/// <reference lib="dom" />
// "Get a token": POST /token (free, one a client address every 10 seconds), the new token shown
// once with a copy button and the choice to keep it in this tab, and the wait when the address is
// limited. The token is the wallet's only key: the page says so before and after.
import { byId, copyButton } from "./view.js";
import { apiClient } from "./api.js";

/** @typedef {import("./api.js").Session} Session */

/**
 * @param {Session} session
 * @param {{ keep(token: string): void }} storage where "keep in this tab" puts it (sessionStorage)
 */
export function newTokenPanel(session, storage) {
  const ask = /** @type {HTMLButtonElement} */ (byId("token-new"));
  const made = byId("token-made");
  const value = byId("token-made-value");
  const actions = byId("token-made-actions");
  const keep = /** @type {HTMLButtonElement} */ (byId("token-keep"));

  ask.addEventListener("click", async () => {
    // Asked without the token this tab may hold: a new wallet is nobody's yet.
    const { data, error, response } = await apiClient("").POST("/token", {
      body: { token: "new" },
      parseAs: "text",
    });
    if (!session.answered(response, error) || typeof data !== "string") return;
    value.textContent = data;
    made.hidden = false;
    keep.disabled = false;
    session.notify("A new token with 100 free credits: copy it now, it is shown this once.");
    value.focus();
  });

  actions.prepend(copyButton("Copy token", () => value.textContent ?? "", {
    shown: value,
    said: (message) => session.notify(message),
  }));

  keep.addEventListener("click", () => {
    const token = value.textContent ?? "";
    if (token === "") return;
    storage.keep(token);
    keep.disabled = true;
    session.open(token);
  });

  byId("token-hide").addEventListener("click", () => {
    value.textContent = "";
    made.hidden = true;
    ask.focus();
  });
}
