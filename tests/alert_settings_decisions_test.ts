// Given events / when the low-balance settings are read or replaced / then the decision: credentials
// redacted in the view, the whole configuration replaced, the signing key kept, an email address
// confirmed from its link before alerts go there. No database.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { decideUnbilled, foldReads, NOW, stream, WALLET, walletAfter } from "./helpers/decider.ts";
import { read } from "../src/ledger/reads.ts";
import { walletSettingsRead } from "../projections/wallet_settings.ts";
import { changeSettings, type SettingsChange, settingsView } from "../src/alerts/settings.ts";
import {
  confirmEmailCommand,
  EMAIL_LINK_TTL_MS,
  emailLinkToken,
  presentedLink,
} from "../src/alerts/email_confirmation.ts";

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

const IDS = {
  freshSecret: "whsec_fresh",
  freshLink: { linkId: "lnk_new", deliveryId: "dlv_new", messageId: "msg_new" },
};
const change = (settings: SettingsChange, current = settingsAfter([configured]), now = NOW) =>
  changeSettings(settings, current, { walletId: WALLET, now, ids: IDS });
const linkOf = (at: Date, linkId = "lnk_1") => ({
  linkId,
  expiresAt: new Date(at.getTime() + EMAIL_LINK_TTL_MS).toISOString(),
});
const SENT_AT = new Date(NOW.getTime() - 3600_000);
const linked = newEvent("LowBalanceSettingsChanged", {
  threshold: 50,
  email: "ops@example.com",
  secret: "whsec_kept",
  emailLink: linkOf(SENT_AT),
});

Deno.test("a change replaces the whole configuration and keeps the signing key", () => {
  const call = change({ threshold: 10 });
  assert.deepEqual(call.events, [
    newEvent("LowBalanceSettingsChanged", { threshold: 10, secret: "whsec_kept" }),
  ]);
  assert.deepEqual(call.effects, []);
});

Deno.test("a new address is unconfirmed and gets a link, mailed through the outbox without its token", () => {
  const first = changeSettings({ threshold: 10, email: "a@example.com" }, undefined, {
    walletId: WALLET,
    now: NOW,
    ids: IDS,
  });
  assert.deepEqual(first.events, [
    newEvent("LowBalanceSettingsChanged", {
      threshold: 10,
      email: "a@example.com",
      secret: "whsec_fresh",
      emailLink: linkOf(NOW, "lnk_new"),
    }),
  ]);
  assert.deepEqual(first.effects, [{
    type: "queueDelivery",
    delivery: {
      kind: "alert_email",
      id: "dlv_new",
      walletId: WALLET,
      messageId: "msg_new",
      cost: 0,
      payload: { confirmation: { linkId: "lnk_new" } },
    },
  }]);
  const view = JSON.parse(settingsView(settingsAfter([first.events![0]])).outcome.body);
  assert.equal(view.low_balance_email_confirmed, false);
});

Deno.test("given a confirmed address, saving it again keeps it confirmed; another address does not", () => {
  const confirmed = settingsAfter([linked, newEvent("AlertEmailConfirmed", { linkId: "lnk_1" })]);
  assert.equal(JSON.parse(settingsView(confirmed).outcome.body).low_balance_email_confirmed, true);
  const same = change({ threshold: 20, email: "ops@example.com" }, confirmed);
  assert.deepEqual(same.events, [
    newEvent("LowBalanceSettingsChanged", {
      threshold: 20,
      email: "ops@example.com",
      secret: "whsec_kept",
      emailConfirmed: true,
    }),
  ]);
  assert.deepEqual(same.effects, []);
  const other = change({ threshold: 20, email: "other@example.com" }, confirmed);
  assert.deepEqual(other.events?.[0].data, {
    threshold: 20,
    email: "other@example.com",
    secret: "whsec_kept",
    emailLink: linkOf(NOW, "lnk_new"),
  });
  assert.equal(other.effects?.length, 1);
});

Deno.test("the same unconfirmed address gets a new link only once the last is 10 minutes old", () => {
  const pending = settingsAfter([linked]);
  const soon = change(
    { threshold: 50, email: "ops@example.com" },
    pending,
    new Date(SENT_AT.getTime() + 60_000),
  );
  assert.deepEqual(soon.events?.[0].data, { threshold: 50, email: "ops@example.com", secret: "whsec_kept" });
  assert.deepEqual(soon.effects, []);
  assert.equal(settingsAfter([linked, soon.events![0]])?.email_link_id, "lnk_1", "the pending link stays");
  const later = change({ threshold: 50, email: "ops@example.com" }, pending, NOW);
  assert.deepEqual((later.events?.[0].data as { emailLink?: unknown }).emailLink, linkOf(NOW, "lnk_new"));
});

Deno.test("wallet alerts go to the email only once it is confirmed", () => {
  const opened = newEvent("WalletOpened", {});
  assert.equal(walletAfter(stream([opened, linked]))?.alert_email, false);
  const confirmed = [opened, linked, newEvent("AlertEmailConfirmed", { linkId: "lnk_1" })];
  assert.equal(walletAfter(stream(confirmed))?.alert_email, true);
  const changed = newEvent("LowBalanceSettingsChanged", {
    threshold: 50,
    email: "new@example.com",
    secret: "whsec_kept",
    emailLink: linkOf(NOW, "lnk_2"),
  });
  assert.equal(walletAfter(stream([...confirmed, changed]))?.alert_email, false);
});

Deno.test("a link confirms only its own pending address, before it expires", () => {
  const opened = newEvent("WalletOpened", {});
  const link = { linkId: "lnk_1", email: "ops@example.com" };
  const confirm = (given: NewEvent[], presented = link, now = NOW) =>
    decideUnbilled(given, confirmEmailCommand(WALLET, presented), { now });
  const confirmedOnce = confirm([opened, linked]);
  assert.deepEqual(confirmedOnce, {
    outcome: "confirmed",
    events: [newEvent("AlertEmailConfirmed", { linkId: "lnk_1" })],
  });
  const afterIt = [opened, linked, ...confirmedOnce.events!];
  assert.deepEqual(confirm(afterIt), { outcome: "already confirmed" });
  const expiry = new Date(SENT_AT.getTime() + EMAIL_LINK_TTL_MS);
  assert.deepEqual(confirm([opened, linked], link, expiry), { outcome: "invalid" });
  assert.deepEqual(confirm([opened, linked], { ...link, linkId: "lnk_0" }), { outcome: "invalid" });
  assert.deepEqual(confirm([opened, linked], { ...link, email: "x@example.com" }), { outcome: "invalid" });
  const gone = newEvent("LowBalanceSettingsChanged", { threshold: 50, secret: "whsec_kept" });
  assert.deepEqual(confirm([opened, linked, gone]), { outcome: "invalid" });
  assert.deepEqual(
    confirm([opened, linked, newEvent("WalletDeactivated", { lastUsedAt: SENT_AT.toISOString() })]),
    { outcome: "invalid" },
  );
});

Deno.test("a presented token must be the HMAC of this wallet, link and address", async () => {
  const pending = settingsAfter([linked]);
  const secret = "server-secret";
  const token = await emailLinkToken(secret, { walletId: WALLET, linkId: "lnk_1", email: "ops@example.com" });
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  const presented = (t: string, at = NOW, walletId = WALLET) =>
    presentedLink(secret, { presented: { walletId, token: t }, settings: pending, now: at });
  assert.deepEqual(await presented(token), { linkId: "lnk_1", email: "ops@example.com" });
  assert.equal(await presented(token.replace(/^./, (c) => c === "A" ? "B" : "A")), undefined);
  assert.equal(await presented(token, new Date(SENT_AT.getTime() + EMAIL_LINK_TTL_MS)), undefined);
  assert.equal(await presented(token, NOW, "b".repeat(64)), undefined);
  assert.equal(
    await presentedLink("another-secret", {
      presented: { walletId: WALLET, token },
      settings: pending,
      now: NOW,
    }),
    undefined,
  );
});
