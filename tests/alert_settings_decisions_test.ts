// Given events / when the low-balance settings are read or replaced / then the decision: credentials
// redacted in the view, the whole configuration replaced, the signing key kept. No database.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { foldReads, stream, WALLET } from "./helpers/decider.ts";
import { read } from "../src/ledger/reads.ts";
import { walletSettingsRead } from "../projections/wallet_settings.ts";
import { changeSettings, settingsView } from "../src/alerts/settings.ts";

const reads = { settings: read(walletSettingsRead, WALLET) };
const settingsAfter = (events: NewEvent[]) => foldReads(reads, stream(events)).settings;
const configured = newEvent("LowBalanceSettingsChanged", {
  threshold: 50,
  webhook: {
    url: "https://hooks.example/alerts",
    headers: { authorization: "Bearer s3cret" },
    options: { routing_key: "rk-1", severity: "warning" },
  },
  email: "ops@example.com",
  secret: "whsec_kept",
});

Deno.test("given no settings, the view says alerts are off", () => {
  assert.deepEqual(JSON.parse(settingsView(undefined).outcome.body), { low_balance_threshold: 0 });
});

Deno.test("given settings, the view redacts header values and credential-like options", () => {
  const view = JSON.parse(settingsView(settingsAfter([configured])).outcome.body);
  assert.deepEqual(view.low_balance_webhook.headers, { authorization: "***" });
  assert.deepEqual(view.low_balance_webhook.options, { routing_key: "***", severity: "warning" });
  assert.equal(view.low_balance_webhook.secret, "whsec_kept");
  assert.equal(view.low_balance_email, "ops@example.com");
});

Deno.test("a change replaces the whole configuration and keeps the signing key", () => {
  const call = changeSettings({ threshold: 10 }, settingsAfter([configured]), "whsec_fresh");
  assert.deepEqual(call.events, [
    newEvent("LowBalanceSettingsChanged", { threshold: 10, secret: "whsec_kept" }),
  ]);
  const first = changeSettings({ threshold: 10, email: "a@example.com" }, undefined, "whsec_fresh");
  assert.deepEqual(first.events, [
    newEvent("LowBalanceSettingsChanged", { threshold: 10, email: "a@example.com", secret: "whsec_fresh" }),
  ]);
});
