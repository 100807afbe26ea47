// @ts-check
/// <reference lib="dom" />
// The dashboard's entry: the token (kept in sessionStorage only), the status line, the balance each
// answer carries, and the order of loading: the free views at once, the charged ones on request.
import { apiClient, problemOf } from "./api.js";
import { byId, count, el } from "./view.js";
import { usagePanel } from "./usage.js";
import { ledgerPanel } from "./ledger.js";
import { logsPanel } from "./logs.js";
import { webhooksPanel } from "./webhooks.js";
import { settingsPanel } from "./settings.js";
import { newTokenPanel } from "./token_new.js";
import { priceLabel } from "./prices.js";
import { kvEntryPanel } from "./kv_entry.js";
import { kvKeysPanel } from "./kv_keys.js";
import { kvBucketsPanel } from "./kv_buckets.js";
import { keysPanel } from "./keys.js";

/** @typedef {import("./api.js").Session} Session */

const TOKEN_KEY = "credits-dashboard-token";
const RECHARGE_TIERS = /** @type {const} */ ([["1", "1,000,000 credits"], ["3", "3,000,000 credits"]]);

const form = /** @type {HTMLFormElement} */ (byId("token-form"));
const input = /** @type {HTMLInputElement} */ (byId("token-input"));
const status = byId("status");
const dashboard = byId("dashboard");
const balance = byId("balance");

function say(/** @type {string} */ message, /** @type {"ok" | "error" | ""} */ tone = "") {
  status.textContent = message;
  status.className = `status ${tone}`;
}

/** What the last billed answer cost and left: the status line repeats them after an action. */
const last = { cost: 0, balance: "" };

/** @type {Session} */
const session = {
  client: apiClient(""),
  token: "",
  answered(response, body) {
    const shown = response.headers.get("x-balance");
    if (shown !== null) {
      last.balance = count(Number(shown));
      balance.textContent = last.balance;
    }
    last.cost = Number(response.headers.get("x-cost") ?? "0");
    if (response.ok) return true;
    say(problemOf(response, body), "error");
    if (response.status === 401) input.focus();
    return false;
  },
  notify: (message) => say(message, "ok"),
  charged: (message, before = 0) =>
    say(`${message} Cost ${priceLabel(before + last.cost)}; balance ${last.balance} credits.`, "ok"),
  open: (token) => open(token),
};

const usage = usagePanel(session);
const ledger = ledgerPanel(session);
logsPanel(session);
kvBucketsPanel(session);
// The entry form and the listing know each other: a key opens in the form, a change lists it again.
const kvEntry = kvEntryPanel(session, {
  shows: (name) => kvKeys.shows(name),
  refresh: () => kvKeys.refresh(),
});
const kvKeys = kvKeysPanel(session, kvEntry);
webhooksPanel(session);
keysPanel(session);
settingsPanel(session);
newTokenPanel(session, { keep: (token) => sessionStorage.setItem(TOKEN_KEY, token) });

async function loadRechargeLinks() {
  const links = byId("recharge-links");
  const found = [];
  for (const [amount, label] of RECHARGE_TIERS) {
    const { data, error, response } = await session.client.GET("/recharge", {
      params: { query: { amount } },
      parseAs: "text",
    });
    if (!session.answered(response, error) || typeof data !== "string") return false;
    found.push(el("a", { href: data, rel: "noopener noreferrer" }, label));
  }
  links.replaceChildren(...found);
  return true;
}

/** Opens the dashboard for a token: the free views first, one after the other. */
async function open(/** @type {string} */ token) {
  session.token = token;
  session.client = apiClient(token);
  dashboard.hidden = false;
  say("Loading the free views…");
  const loaded = (await usage.load()) && (await ledger.load()) && (await loadRechargeLinks());
  if (loaded) say("Free views loaded. Charged views load only when you ask.", "ok");
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const token = input.value.trim();
  if (token.length < 10) return say("A token has at least 10 characters.", "error");
  sessionStorage.setItem(TOKEN_KEY, token);
  input.value = "";
  open(token);
});

byId("token-forget").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  session.token = "";
  session.client = apiClient("");
  dashboard.hidden = true;
  balance.textContent = "…";
  say("Token forgotten in this tab.", "ok");
  input.focus();
});

const kept = sessionStorage.getItem(TOKEN_KEY);
if (kept) open(kept);
// Every control has its handler from here on (the page's tests wait for this mark before clicking).
document.body.dataset.ready = "true";
