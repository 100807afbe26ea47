// A first-time user's journey through the dashboard in headless Chromium, from an empty profile:
// get a token, use the key-value store, make webhooks and watch their deliveries, make and revoke a
// scoped key, set the alert threshold. Every charged action's balance change is checked against the
// price its button showed, and the journey ends with a clean audit.
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import { auditOf, type Service, startService } from "./helpers/service.ts";
import {
  type AxeViolation,
  axeViolations,
  clearStatus,
  findChromium,
  launchChromium,
  shownBalance,
  statusSays,
  STEP_TIMEOUT_MS,
  tabTo,
  textOf,
} from "./helpers/browser.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";
import { walletClient } from "./helpers/client.ts";
import { sendMail } from "./helpers/smtp.ts";

declare const document: any, sessionStorage: any, getComputedStyle: any, navigator: any;

const chromium = findChromium();

/** What the steps share. */
interface Journey {
  svc: Service;
  page: Page;
  receiver: Receiver;
  /** The token the page made, once it has. */
  token: string;
  /** The mailbox webhook's address, once made. */
  mailbox: string;
  /** Where the screenshots and the axe result go. */
  shots: string;
  /** axe-core's violations per state of the page and width. */
  axe: Record<string, AxeViolation[]>;
}

/** The credits a button's label states: `(1 credit)`, `(free)`. */
async function priceOnButton(page: Page, selector: string): Promise<number> {
  const label = await textOf(page, selector);
  if (/\(free\)/.test(label)) return 0;
  const found = /\((\d+) credits?\)/.exec(label);
  assert.ok(found, `${selector} states no price: "${label}"`);
  return Number(found[1]);
}

/**
 * Clicks a charged button and checks the balance fell by exactly the price it showed, and that the
 * status line says that cost (`elsewhere`: credits the test spent outside the page since the page
 * last showed the balance). Returns the status line.
 */
async function pricedClick(page: Page, selector: string, says: RegExp, elsewhere = 0): Promise<string> {
  const price = await priceOnButton(page, selector);
  const before = await shownBalance(page) - elsewhere;
  await clearStatus(page);
  await page.click(selector);
  const status = await statusSays(page, new RegExp(`${says.source}.*Cost`));
  const after = await shownBalance(page);
  assert.equal(before - after, price, `${selector}: ${before} → ${after}, price shown ${price}`);
  const cost = /Cost (free|(\d+) credits?)/.exec(status)!;
  assert.equal(cost[1] === "free" ? 0 : Number(cost[2]), price, status);
  return status;
}

/** Replaces an input's text, as a user selecting it all and typing would. */
async function typeInto(page: Page, selector: string, text: string) {
  await page.$eval(selector, (e: any) => (e.value = ""));
  await page.type(selector, text);
}

/**
 * Clicks a charged button whose call is refused, and checks the refusal was charged its shown price;
 * `elsewhere`: credits the test spent outside the page since the page last showed the balance.
 */
async function refusedClick(page: Page, selector: string, says: RegExp, elsewhere = 0): Promise<string> {
  const price = await priceOnButton(page, selector);
  const before = await shownBalance(page) - elsewhere;
  await clearStatus(page);
  await page.click(selector);
  const status = await statusSays(page, says);
  assert.equal(before - await shownBalance(page), price, `${selector} refused: charged its price`);
  return status;
}

async function usesTheKeyValueStore({ page, svc, token }: Journey) {
  const MARKUP = '<img src="/nowhere" id="injected"> & <b>bold</b>';
  await typeInto(page, "#kv-bucket", "notes");
  await typeInto(page, "#kv-key", "greeting");
  await typeInto(page, "#kv-value", MARKUP);
  await typeInto(page, "#kv-ttl", "2h");
  assert.match(await textOf(page, "#kv-etag"), /creates the entry/);
  await pricedClick(page, "#kv-save", /Created greeting\./);
  // A second create of the same key is refused: the page never overwrites what it did not open.
  await page.click("#kv-key");
  await page.keyboard.type(" ");
  await page.keyboard.press("Backspace");
  await refusedClick(page, "#kv-save", /Changed meanwhile/);

  await pricedClick(page, "#kv-load", /Opened greeting\./);
  assert.equal(await page.$eval("#kv-value", (e: any) => e.value), MARKUP, "shown as text");
  assert.equal(await page.$("#injected"), null, "never as markup");
  assert.match(await textOf(page, "#kv-etag"), /Version "\d+"/);

  // Someone else writes it meanwhile: the edit is refused with 412 and a clear message, nothing lost.
  const other = walletClient(svc, token);
  assert.equal((await other.post("/kv/notes/greeting", "written elsewhere")).status, 200);
  await typeInto(page, "#kv-value", "my edit");
  const refused = await refusedClick(page, "#kv-save", /Changed meanwhile/, 1);
  assert.match(refused, /nothing was changed/);
  assert.equal((await other.get("/kv/notes/greeting")).text, "written elsewhere");
  await pricedClick(page, "#kv-load", /Opened greeting\./, 1);
  assert.equal(await page.$eval("#kv-value", (e: any) => e.value), "written elsewhere");
  await typeInto(page, "#kv-value", "my edit");
  await pricedClick(page, "#kv-save", /Saved greeting\./);
  assert.equal((await other.get("/kv/notes/greeting")).text, "my edit");
  const readElsewhere = 1;
  assert.equal(await page.$eval("#kv-save", (e: any) => e.disabled), true, "open it again to edit again");

  // A counter, incremented twice.
  await typeInto(page, "#kv-key", "visits");
  await typeInto(page, "#kv-ttl", "");
  await pricedClick(page, "#kv-incr", /visits is now 1\./, readElsewhere);
  await typeInto(page, "#kv-by", "4");
  await pricedClick(page, "#kv-incr", /visits is now 5\./);
  await typeInto(page, "#kv-ttl", "1w");
  await clearStatus(page);
  await page.click("#kv-incr");
  assert.match(await statusSays(page, /Invalid time to live/), /s, m, h or d/);

  // Listed by prefix, in pages of 5: greeting, then three more, then visits.
  for (const name of ["k1", "k2", "k3", "k4"]) {
    assert.equal((await other.post(`/kv/notes/${name}`, "x".repeat(1000))).status, 200);
  }
  await page.select("#kv-limit", "5");
  await pricedClick(page, "#kv-list", /5 key\(s\) on page 1 of notes\./, 4);
  const rows = await page.$$eval("#kv-table tbody tr", (trs: any[]) => trs.map((tr) => tr.textContent));
  assert.equal(rows.length, 5);
  assert.match(rows[0], /^greeting7 Bin 1 hour 59 minutesOpen \(1 credit\)$/);
  assert.match(rows[1], /^k11000 Bin 29 days 23 hours/);
  await pricedClick(page, "#kv-next", /1 key\(s\) on page 2 of notes\./);
  assert.match(await textOf(page, "#kv-table tbody"), /^visits1 Bin 29 days 23 hours/);
  await pricedClick(page, "#kv-previous", /5 key\(s\) on page 1/);
  await typeInto(page, "#kv-prefix", "k");
  await pricedClick(page, "#kv-list", /4 key\(s\) on page 1 of notes\./);

  // The wallet's buckets; one lists its keys.
  await typeInto(page, "#kv-prefix", "");
  await pricedClick(page, "#kv-buckets-load", /1 bucket\(s\)\./);
  assert.equal(await textOf(page, "#kv-buckets"), "notes (1 credit)");
  await pricedClick(page, "#kv-buckets button", /5 key\(s\) on page 1 of notes\./);
  await typeInto(page, "#kv-prefix", "k");
  await pricedClick(page, "#kv-list", /4 key\(s\) on page 1 of notes\./);

  // Opened from the list, then deleted with its ETag. While the listing shows the bucket, a delete or
  // a create lists it again, and its button's price says so.
  const listedKeys = () =>
    page.$$eval("#kv-table tbody tr", (trs: any[]) => trs.map((tr) => tr.cells[0].textContent));
  await pricedClick(page, "#kv-table tbody tr:nth-child(2) button", /Opened k2\./);
  assert.equal(await textOf(page, "#kv-delete"), "Delete (2 credits)");
  assert.match(await textOf(page, "#kv-relist"), /increment lists this bucket's keys again: 1 credit more/);
  await pricedClick(page, "#kv-delete", /Deleted k2\. Keys listed again\./);
  assert.deepEqual(await listedKeys(), ["k1", "k3", "k4"]);
  assert.equal((await other.get("/kv/notes/k2")).status, 404);
  await typeInto(page, "#kv-key", "k5");
  await typeInto(page, "#kv-value", "new");
  await typeInto(page, "#kv-ttl", "");
  await pricedClick(page, "#kv-save", /Created k5\. Keys listed again\./, 1);
  assert.deepEqual(await listedKeys(), ["k1", "k3", "k4", "k5"]);
  await typeInto(page, "#kv-key", "k6");
  await typeInto(page, "#kv-by", "1");
  await pricedClick(page, "#kv-incr", /k6 is now 1\. Keys listed again\./);
  assert.deepEqual(await listedKeys(), ["k1", "k3", "k4", "k5", "k6"]);
  // Another bucket in the field: nothing to list again, the plain price.
  await typeInto(page, "#kv-bucket", "other");
  assert.equal(await textOf(page, "#kv-save"), "Save (1 credit)");
  assert.equal(await textOf(page, "#kv-relist"), "");
  await typeInto(page, "#kv-bucket", "notes");
}

/** What an email to a mailbox costs (README: 2, or 5 with attachments); it is not the page's call. */
const EMAIL_PRICE = 2;

/** A button of a webhook's card, by the start of its label. */
const cardButton = (webhookId: string, label: string) =>
  `li[data-webhook="${webhookId}"] button::-p-text(${label})`;

/** Opens a webhook's deliveries and returns their `data-status` and text, newest first. */
async function deliveriesOf(page: Page, webhookId: string, says: RegExp, elsewhere = 0) {
  await pricedClick(page, cardButton(webhookId, "Deliveries"), says, elsewhere);
  return await page.$$eval(
    `li[data-webhook="${webhookId}"] .delivery-list > li`,
    (items: any[]) => items.map((li) => ({ status: li.dataset.status, text: li.textContent ?? "" })),
  );
}

async function makesWebhooks(j: Journey) {
  const { page, receiver } = j;
  await pricedClick(page, "#webhooks-load", /0 webhook\(s\)\./);
  await typeInto(page, "#wh-id", "inbox");
  await typeInto(page, "#wh-url", `${receiver.url}/in`);
  await pricedClick(page, "#wh-create", /Webhook inbox created\./);
  const made = await textOf(page, "#wh-made");
  assert.match(made, /signing secret, shown this once:whsec_\S+/);
  const address = /r_[a-z0-9]+@[^\s]+?(?=Copy)/.exec(made)?.[0];
  assert.ok(address, made);
  j.mailbox = address;
  assert.match(await textOf(page, 'li[data-webhook="inbox"]'), new RegExp(`Mailbox${address}Stateactive`));

  await typeInto(page, "#wh-id", "nightly");
  await typeInto(page, "#wh-url", `${receiver.url}/cron`);
  await page.click("#wh-kind-schedule");
  await typeInto(page, "#wh-timezone", "Europe/Rome");
  // The preview is the server's (free): a bad cron gets POST /webhook's phrase, a good one 5 runs.
  const balance = await shownBalance(page);
  await typeInto(page, "#wh-cron", "61 3 * * *");
  await page.click("#wh-preview-button");
  await page.waitForFunction(() => /Invalid/.test(document.getElementById("wh-preview-note").textContent));
  await typeInto(page, "#wh-cron", "0 3 * * *");
  await page.click("#wh-preview-button");
  await page.waitForFunction(() => document.querySelectorAll("#wh-preview li").length === 5);
  const runs = await page.$$eval("#wh-preview li", (lis: any[]) => lis.map((li) => li.textContent));
  for (const run of runs) {
    assert.match(run, /^\d{4}-\d\d-\d\d 03:00 \(\+0[12]:00\), \d{4}-\d\d-\d\d 0[12]:00:00 UTC$/);
  }
  assert.equal(await shownBalance(page), balance, "the preview is free");
  await pricedClick(page, "#wh-create", /Webhook nightly created\./);
  const nextRun = /Next run(\S+ \S+ UTC)/.exec(await textOf(page, 'li[data-webhook="nightly"]'))?.[1];
  assert.equal(nextRun, runs[0].split(", ")[1], "the scheduler plans the preview's first run");
  assert.doesNotMatch(await textOf(page, "#wh-made"), /address/);
  assert.match(
    await textOf(page, 'li[data-webhook="nightly"]'),
    /Schedule0 3 \* \* \* \(Europe\/Rome\)Stateactive/,
  );
}

async function sendsTestAndMail(j: Journey) {
  const { page, receiver, svc } = j;
  await pricedClick(page, cardButton("inbox", "Send a test"), /Test of inbox delivered\./);
  assert.match(await textOf(page, 'li[data-webhook="inbox"] .actions p'), /^Test delivered: /);
  await receiver.waitFor(1);

  const mail = { from: "ann@sender.example", to: j.mailbox, subject: "Order 1", text: "First order" };
  assert.equal((await sendMail(svc, mail)).code, 250);
  const [, delivered] = await receiver.waitFor(2);
  assert.match(delivered.body, /Order 1/);
  const list = await deliveriesOf(page, "inbox", /2 recent deliveries of inbox\./, EMAIL_PRICE);
  assert.deepEqual(list.map((d) => d.status), ["delivered", "delivered"]);
  assert.match(list[0].text, /email: delivered, 1 attempt\(s\).*: 200 in \d+ ms/);
  await pricedClick(
    page,
    'li[data-webhook="inbox"] .delivery-list > li:first-child button::-p-text(Payload)',
    /Payload of/,
  );
  const payload = await textOf(page, 'li[data-webhook="inbox"] .delivery-list > li:first-child pre');
  assert.match(payload, /^As sent:\n\{/);
  assert.match(payload, /Order 1/);
}

async function pausesAndResumes(j: Journey) {
  const { page, receiver, svc } = j;
  await pricedClick(page, cardButton("inbox", "Pause"), /inbox paused\./);
  assert.match(await textOf(page, 'li[data-webhook="inbox"]'), /Statepaused \(paused by owner\)/);
  const mail = { from: "ann@sender.example", to: j.mailbox, subject: "Order 2", text: "Held order" };
  assert.equal((await sendMail(svc, mail)).code, 250);
  const held = await deliveriesOf(page, "inbox", /3 recent deliveries of inbox\./, EMAIL_PRICE);
  assert.equal(held[0].status, "paused");
  assert.match(held[0].text, /email: held: its webhook is paused, 0 attempt\(s\)No attempt yet\./);
  await pricedClick(
    page,
    'li[data-webhook="inbox"] .delivery-list > li:first-child button::-p-text(Payload)',
    /Payload of/,
  );
  const payload = await textOf(page, 'li[data-webhook="inbox"] .delivery-list > li:first-child pre');
  assert.match(payload, /Order 2/, "a held delivery shows what will be sent");
  assert.match(payload, /^To be sent:/);
  assert.equal(receiver.received.length, 2, "nothing sent while paused");

  await pricedClick(page, cardButton("inbox", "Resume"), /inbox resumed\./);
  const [, , sent] = await receiver.waitFor(3);
  assert.match(sent.body, /Order 2/);
  const after = await deliveriesOf(page, "inbox", /3 recent deliveries of inbox\./);
  assert.equal(after[0].status, "delivered");
}

async function editsRecoversDeletes({ page }: Journey) {
  await page.click(cardButton("nightly", "Edit"));
  await typeInto(page, "#edit-cron-nightly", "30 4 * * *");
  await pricedClick(page, cardButton("nightly", "Save changes"), /nightly saved\./);
  assert.match(await textOf(page, 'li[data-webhook="nightly"]'), /Schedule30 4 \* \* \* \(Europe\/Rome\)/);
  await page.click(cardButton("inbox", "Edit"));
  await page.select("#edit-format-inbox", "slack");
  await pricedClick(page, cardButton("inbox", "Save changes"), /inbox saved\./);
  assert.match(await textOf(page, 'li[data-webhook="inbox"]'), /Formatslack/);
  await pricedClick(page, cardButton("inbox", "Deliveries"), /recent deliveries of inbox\./);
  await pricedClick(
    page,
    cardButton("inbox", "Recover failed"),
    /0 failed deliveries of inbox queued again\./,
  );

  // Deleting asks first; "Keep it" keeps it, free.
  await page.click(cardButton("nightly", "Delete"));
  await page.click(cardButton("nightly", "Keep it"));
  assert.ok(await page.$('li[data-webhook="nightly"]'));
  await page.click(cardButton("nightly", "Delete"));
  await pricedClick(page, cardButton("nightly", "Really delete nightly?"), /nightly deleted\./);
  assert.equal(await page.$('li[data-webhook="nightly"]'), null);
}

async function makesUsesRevokesAKey({ page, svc }: Journey) {
  await typeInto(page, "#key-name", "reader");
  await page.select("#key-scope", "read");
  await typeInto(page, "#key-buckets", "notes");
  await typeInto(page, "#key-cap", "5");
  await typeInto(page, "#key-days", "1");
  await pricedClick(page, "#key-create", /Key reader created\./);
  const secret = (await textOf(page, "#key-made-value")).trim();
  assert.match(secret, /^k_\S{32}$/);

  // Used from outside the page: a read in its bucket, a write and another bucket refused.
  const key = walletClient(svc, secret);
  const read = await key.get("/kv/notes/greeting");
  assert.equal(read.status, 200);
  assert.equal(read.text, "my edit");
  const write = await key.post("/kv/notes/greeting", "nope");
  assert.equal(write.status, 403);
  const elsewhere = await key.get("/kv/other/x");
  assert.equal(elsewhere.status, 403);
  const keySpent = [read, write, elsewhere].reduce((sum, r) => sum + Number(r.headers.get("x-cost")), 0);

  await pricedClick(page, "#keys-load", /1 key\(s\)\./, keySpent);
  const row = await page.$$eval(
    "#keys-table tbody tr",
    (trs: any[]) => trs.map((tr) => [...tr.cells].map((c: any) => c.textContent)),
  );
  assert.equal(row.length, 1);
  assert.deepEqual(row[0].slice(0, 4), ["reader", "read", "notes", `${keySpent} of 5`]);
  assert.match(row[0][4], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/, "last use");
  assert.match(row[0][5], /^active, until /);
  await pricedClick(page, "#keys-table button::-p-text(Revoke reader)", /Key reader revoked/);
  assert.equal((await key.get("/kv/notes/greeting")).status, 401);
}

/**
 * The committed screenshots' folder when UPDATE_SCREENSHOTS=1 (`src/http/dashboard/screenshots/`,
 * linked from the README), else a temporary one.
 */
async function screenshotFolder(): Promise<string> {
  if (Deno.env.get("UPDATE_SCREENSHOTS") !== "1") {
    return await Deno.makeTempDir({ prefix: "dashboard-journey-" });
  }
  const folder = new URL("../src/http/dashboard/screenshots/", import.meta.url).pathname;
  await Deno.mkdir(folder, { recursive: true });
  return folder;
}

const WIDTHS = [1280, 375] as const;

/**
 * At a desktop's and a phone's width: no serious or critical axe violation, nothing wider than the
 * screen, and a screenshot of each view (each card of the page) as it is now.
 */
async function checksViews(j: Journey, state: string) {
  const { page } = j;
  for (const width of WIDTHS) {
    await page.setViewport({ width, height: 900 });
    await page.waitForFunction((w: number) => document.documentElement.scrollWidth <= w, {}, width);
    const violations = await axeViolations(page);
    j.axe[`${state} at ${width} px`] = violations;
    const grave = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    assert.deepEqual(grave, [], `${state} at ${width} px`);
    const views = await page.$$("main section.card");
    for (const view of views) {
      if (!await view.isVisible()) continue;
      const name = await view.evaluate((e: any) => e.getAttribute("aria-labelledby").replace(/-title$/, ""));
      await view.screenshot({ path: `${j.shots}/${name}-${width}.png` });
    }
  }
  await page.setViewport({ width: 1280, height: 900 });
}

async function setsTheAlertThreshold({ page }: Journey) {
  await pricedClick(page, "#settings-load", /Alert settings loaded\./);
  await typeInto(page, "#settings-threshold", "20");
  await pricedClick(page, "#settings-save", /Alert settings saved\./);
  await pricedClick(page, "#settings-load", /Alert settings loaded\./);
  assert.equal(await page.$eval("#settings-threshold", (e: any) => e.value), "20");
}

/** Replaces the focused field's text with keys only: select all, then type. */
async function retype(page: Page, text: string) {
  await page.keyboard.down("Control");
  await page.keyboard.press("KeyA");
  await page.keyboard.up("Control");
  await page.keyboard.type(text);
}

async function showsOwnCallsFirst({ page }: Journey) {
  await page.select("#logs-n", "5");
  await page.click("#logs-load");
  await page.waitForSelector("#logs-table tbody tr td:nth-child(3)");
  const calls = await page.$$eval(
    "#logs-table tbody tr td:nth-child(3)",
    (tds: any[]) => tds.map((td) => td.textContent),
  );
  assert.equal(calls.length, 5);
  assert.ok(calls.every((c: string) => !/\/token\/(usage|ledger)|\/recharge/.test(c)), calls.join(" | "));
  // A free view now (the schedule preview), then the logs with the page's own views: it is there.
  await page.click("#wh-preview-button");
  await page.waitForFunction(() => document.querySelectorAll("#wh-preview li").length === 5);
  await page.click("#logs-views");
  await page.click("#logs-load");
  await page.waitForFunction(() =>
    [...document.querySelectorAll("#logs-table tbody tr td:nth-child(3)")].some((td: any) =>
      td.textContent.includes("/schedule-preview")
    )
  );
}

async function worksByKeyboard({ page }: Journey) {
  await page.focus("#token-new");
  await tabTo(page, "kv-key");
  await retype(page, "typed");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "kv-value");
  await retype(page, "by keyboard");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "kv-ttl");
  await retype(page, "1d");
  await tabTo(page, "kv-save");
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, "none", "the focus is visible");
  await clearStatus(page);
  await page.keyboard.press("Enter");
  await statusSays(page, /Created typed\./);
  // A delete asks first, and the confirmation takes the focus.
  await page.focus('li[data-webhook="inbox"] button');
  for (let i = 0; i < 20; i++) {
    const label = await page.evaluate(() => document.activeElement?.textContent ?? "");
    if (label.startsWith("Delete")) break;
    await page.keyboard.press("Tab");
  }
  await page.keyboard.press("Enter");
  assert.match(
    await page.evaluate(() => document.activeElement?.textContent ?? ""),
    /^Really delete inbox\?/,
  );
  await page.keyboard.press("Tab");
  await page.keyboard.press("Enter");
  assert.match(await page.evaluate(() => document.activeElement?.textContent ?? ""), /^Delete/);
}

/** The messages for 404, 409, 413, 403 and 401 (402 and 429 are in tests/dashboard_test.ts and above). */
async function explainsRefusals({ page, svc, token }: Journey) {
  await typeInto(page, "#kv-key", "missing");
  await refusedClick(page, "#kv-load", /Not found: it does not exist/);
  await typeInto(page, "#wh-id", "inbox");
  await page.click("#wh-kind-mailbox");
  await refusedClick(page, "#wh-create", /Conflict: .*already exists/);
  await typeInto(page, "#kv-key", "big");
  await page.$eval("#kv-value", (e: any) => (e.value = "x".repeat(300_000)));
  await clearStatus(page);
  await page.click("#kv-save");
  assert.match(await statusSays(page, /Too large/), /at most \d+ bytes/);

  // A scoped key pasted as the token: the wallet-only views are refused with 403; revoked, 401.
  const wallet = walletClient(svc, token);
  const made = await wallet.postJson("/token/keys", { name: "pasted", scope: "read" });
  const key = made.json().key;
  await page.click("#token-forget");
  await typeInto(page, "#token-input", key);
  await page.click("#token-open");
  assert.match(await statusSays(page, /Forbidden/), /only the\s+wallet token may make/);
  await wallet.delete(`/token/keys/${made.json().id}`);
  await page.click("#token-open");
  await page.click("#token-forget");
  await typeInto(page, "#token-input", key);
  await page.click("#token-open");
  await statusSays(page, /Unauthorized/);
}

async function getsAToken(j: Journey) {
  const { page, svc } = j;
  await page.goto(svc.url + "/");
  await page.waitForSelector("body[data-ready]");
  assert.equal(await page.$eval("#dashboard", (e: any) => e.hidden), true);
  assert.match(await textOf(page, ".new-token"), /only key to its wallet/);
  await page.click("#token-new");
  await statusSays(page, /shown this once/);
  const token = (await textOf(page, "#token-made-value")).trim();
  assert.match(token, /^\S{10,}$/);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, "kept only when asked");
  await page.browserContext().overridePermissions(svc.url, ["clipboard-read", "clipboard-sanitized-write"]);
  await page.click("#token-made-actions button::-p-text(Copy token)");
  await statusSays(page, /Copied to the clipboard/);
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), token);
  await checksViews(j, "new token");
  await page.click("#token-keep");
  await statusSays(page, /Free views loaded/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("credits-dashboard-token")), token);
  assert.equal(await shownBalance(page), 100);
  j.token = token;

  // A second token at once: the address waits, and the page says how long.
  await page.click("#token-new");
  assert.match(await statusSays(page, /Too many requests/), /Try again in \d+ seconds/);
  await page.click("#token-hide");
  assert.equal(await textOf(page, "#token-made-value"), "");
}

Deno.test({
  name: chromium ? "a first-time user's journey through the dashboard" : "a first-time user's journey " +
    "(skipped: no chromium on the PATH nor CHROMIUM_PATH; .ci/run installs Debian's chromium)",
  ignore: !chromium,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const svc = await startService({ smtp: true, env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
    const receiver = startReceiver();
    const chrome = await launchChromium(chromium!).catch(async (error) => {
      await svc.dispose();
      await receiver.close();
      throw error;
    });
    try {
      const page = await chrome.browser.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const problems: string[] = [];
      const origins = new Set<string>();
      page.on("pageerror", (error) => problems.push(`page error: ${error}`));
      page.on("request", (request) => origins.add(new URL(request.url()).origin));
      await page.setViewport({ width: 1280, height: 900 });
      const shots = await screenshotFolder();
      const j: Journey = { svc, page, receiver, token: "", mailbox: "", shots, axe: {} };

      await t.step("the empty page passes axe at 1280 and 375 px", async () => {
        await page.goto(svc.url + "/");
        await page.waitForSelector("body[data-ready]");
        await checksViews(j, "empty");
      });
      await t.step("get a token: shown once, kept in this tab when asked, the 429 wait", () => getsAToken(j));

      await t.step(
        "the key-value store: create, open as text, edit with the ETag (a concurrent change refused), " +
          "increment, list by prefix in pages, delete",
        () => usesTheKeyValueStore(j),
      );

      await t.step(
        "a mailbox webhook and a scheduled one: the secret and the address shown once",
        () => makesWebhooks(j),
      );
      await t.step(
        "a test send, then a real email over SMTP delivered, its payload shown",
        () => sendsTestAndMail(j),
      );
      await t.step(
        "paused: the mail is held with the payload it will send; resumed: delivered",
        () => pausesAndResumes(j),
      );

      await t.step(
        "a schedule edited, a recover, a delete after its confirmation",
        () => editsRecoversDeletes(j),
      );

      await t.step(
        "a scoped key made and shown once, used from the test, listed with its spend, revoked",
        () => makesUsesRevokesAKey(j),
      );

      await t.step("the alert threshold set", () => setsTheAlertThreshold(j));
      await t.step(
        "the call logs show the user's calls; the page's own free views only when asked",
        () => showsOwnCallsFirst(j),
      );
      await t.step(
        "every view at 1280 and 375 px: no serious or critical axe violation, nothing too wide; screenshots",
        () => checksViews(j, "in use"),
      );
      await t.step("keyboard only: an entry created, a delete asked and declined", () => worksByKeyboard(j));
      await t.step("404, 409, 413, 403 and 401 get clear messages", () => explainsRefusals(j));

      const left = (await walletClient(svc, j.token).get("/token/usage?days=1")).balance;
      console.log(`Credits left at the end of the journey: ${left} of 100`);

      await t.step("the audit is clean", async () => {
        const audit = await auditOf(svc);
        assert.equal(audit.code, 0, audit.stdout + audit.stderr);
      });
      await Deno.writeTextFile(`${shots}/axe.json`, JSON.stringify(j.axe, null, 2) + "\n");
      console.log(`Screenshots and axe result: ${shots}`);
      assert.deepEqual(problems, []);
      assert.deepEqual([...origins], [svc.url], "every request went to the service");
    } finally {
      await chrome.close();
      await svc.dispose();
      await receiver.close();
    }
  },
});
