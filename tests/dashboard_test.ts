// The dashboard in a real browser (headless Chromium): a token typed by keyboard, the balance, a
// chart drawn from real usage, the ledger paged, the call logs filtered, the webhooks, clear messages
// for 401, 402 and 429, nothing loaded from elsewhere, and a layout that fits a phone. Screenshots of
// a desktop and a phone go to a temporary directory.
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { type Service, startService } from "./helpers/service.ts";
import { findChromium, launchChromium } from "./helpers/browser.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { DASHBOARD_CSP } from "../src/http/routes/dashboard.ts";

// The functions handed to the page run there, where these exist; Deno's own types have no DOM.
declare const document: any, sessionStorage: any;

const chromium = findChromium();
const STEP_TIMEOUT_MS = 10_000;

const textOf = (page: Page, selector: string) => page.$eval(selector, (e: any) => e.textContent ?? "");
const rowsOf = (page: Page, table: string) =>
  page.$$eval(
    `${table} tbody tr`,
    (rows: any[]) => rows.map((row) => [...row.cells].map((c: any) => c.textContent ?? "")),
  );

async function statusSays(page: Page, pattern: RegExp) {
  await page.waitForFunction(
    (source) => new RegExp(source).test(document.getElementById("status")?.textContent ?? ""),
    { timeout: STEP_TIMEOUT_MS },
    pattern.source,
  );
  return await textOf(page, "#status");
}

Deno.test("the dashboard's files are served with a policy that allows nothing external", async () => {
  const svc = await startService();
  try {
    const page = await call(svc, "GET", "/");
    assert.equal(page.status, 200);
    assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(page.headers.get("content-security-policy"), DASHBOARD_CSP);
    assert.match(DASHBOARD_CSP, /default-src 'none'/);
    assert.doesNotMatch(page.text, /(src|href)="(https?:)?\/\//, "nothing from another origin");
    const script = await call(svc, "GET", "/dashboard/main.js");
    assert.equal(script.headers.get("content-type"), "text/javascript; charset=utf-8");
    const runtime = await call(svc, "GET", "/dashboard/openapi-fetch.js");
    assert.equal(runtime.status, 200);
    assert.match(runtime.text, /export \{[^}]*createClient as default/);
    assert.doesNotMatch(runtime.text, /sourceMappingURL/);
    for (const path of ["/dashboard/api_types.ts", "/dashboard/index.html", "/dashboard/..%2Fdeno.json"]) {
      assert.equal((await call(svc, "GET", path)).status, 404, path);
    }
  } finally {
    await svc.dispose();
  }
});

/** What the steps share: the page, the service and the wallet the page shows. */
interface Visit {
  svc: Service;
  page: Page;
  token: string;
  /** The balance and the calls counted before the page opened. */
  balance: number;
  callsSoFar: number;
  shots: string;
  /** Where the mailbox webhook delivers: one email so far. */
  receiver: Receiver;
}

/**
 * A wallet with KV calls (some missing keys), two webhooks and an email delivered by the mailbox one;
 * its usage and balance so far.
 */
async function seededWallet(svc: Service, receiver: Receiver) {
  const token = await newToken(svc);
  const client = walletClient(svc, token);
  for (let i = 0; i < 11; i++) await client.post(`/kv/notes/k${i}`, `value ${i}`);
  for (let i = 0; i < 5; i++) await client.get(`/kv/notes/missing${i}`);
  const inbox = (await client.postJson("/webhook", { webhookId: "inbox", url: `${receiver.url}/in` })).json();
  const mail = { from: "ann@sender.example", to: inbox.email, subject: "Hello", text: "Hi" };
  assert.equal((await sendMail(svc, mail)).code, 250);
  await receiver.waitFor(1);
  await client.postJson("/webhook", {
    webhookId: "nightly",
    url: "https://hooks.example.com/cron",
    schedule: { cron: "0 3 * * *", timezone: "Europe/Rome" },
  });
  const usage = await client.get("/token/usage?days=30");
  const callsSoFar = usage.json().days.reduce(
    (sum: number, day: any) => sum + Object.values(day.byType).reduce((s: number, c: any) => s + c.calls, 0),
    0,
  );
  return { token, balance: usage.balance!, callsSoFar };
}

/** Records page errors, console errors other than refused calls, and every origin asked. */
function watch(page: Page) {
  const problems: string[] = [];
  const origins = new Set<string>();
  page.on("pageerror", (error) => problems.push(`page error: ${error}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().includes("status of 4")) problems.push(message.text());
  });
  page.on("request", (request) => origins.add(new URL(request.url()).origin));
  return { problems, origins };
}

async function opensByKeyboard({ svc, page, token, balance, callsSoFar }: Visit) {
  await page.goto(svc.url + "/");
  await page.waitForSelector("body[data-ready]");
  for (let i = 0; i < 5 && await page.evaluate(() => document.activeElement?.id) !== "token-input"; i++) {
    await page.keyboard.press("Tab");
  }
  assert.equal(await page.evaluate(() => document.activeElement?.id), "token-input", "reached by Tab");
  assert.equal(await textOf(page, "label[for=token-input]"), "Token");
  await page.keyboard.type(token);
  await page.keyboard.press("Enter");
  await statusSays(page, /Free views loaded/);
  assert.equal(await textOf(page, "#balance"), balance.toLocaleString("en-US"));
  const links = await page.$$eval("#recharge-links a", (as: any[]) => as.map((a) => a.getAttribute("href")));
  assert.equal(links.length, 2);
  assert.ok(links.every((href: string) => href.includes("client_reference_id=")));
  // The chart shows the calls counted before, and the page's own usage call.
  const total = await page.$eval("#usage-chart svg", (svg: any) => Number(svg.getAttribute("data-total")));
  assert.equal(total, callsSoFar + 1);
  assert.ok((await page.$$("#usage-chart svg rect.bar")).length >= 2, "kv and token bars");
  assert.match(await textOf(page, "#usage-legend"), /kv: 16/);
  assert.equal((await rowsOf(page, "#ledger-table")).length, 10);
}

async function keepsTokenInTab({ svc, page, token }: Visit) {
  assert.equal(page.url(), svc.url + "/");
  assert.equal(await page.evaluate(() => document.cookie), "");
  assert.equal((await page.cookies()).length, 0);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("credits-dashboard-token")), token);
  assert.equal(await page.$eval("#token-input", (e: any) => e.value), "");
  assert.ok(svc.output().includes('"path":"/token/ledger"'), "requests are logged");
  assert.ok(!svc.output().includes(token), "the token is never logged");
}

async function pagesLedger({ page }: Visit) {
  const first = await rowsOf(page, "#ledger-table");
  await page.click("#ledger-older");
  await page.waitForFunction(() => document.getElementById("ledger-page")?.textContent === "Page 2");
  const rows = [...first, ...await rowsOf(page, "#ledger-table")];
  const number = (text: string) => Number(text.replace(/[+,]/g, ""));
  for (let i = 0; i < rows.length - 1; i++) {
    assert.equal(number(rows[i][3]), number(rows[i + 1][3]) + number(rows[i][2]), `row ${i}`);
  }
  assert.equal(rows.at(-1)![1], "grant");
  assert.equal(await page.$eval("#ledger-older", (b: any) => b.disabled), true);
  await page.click("#ledger-newer");
  await page.waitForFunction(() => document.getElementById("ledger-page")?.textContent === "Page 1");
  assert.deepEqual(await rowsOf(page, "#ledger-table"), first);
}

async function filtersLogs({ page, balance }: Visit) {
  assert.equal((await rowsOf(page, "#logs-table")).length, 0, "nothing charged before asking");
  await page.select("#logs-type", "kv");
  await page.select("#logs-n", "25");
  assert.equal(await textOf(page, "#logs-load"), "Load logs (up to 25 credits)");
  await page.click("#logs-load");
  await page.waitForSelector("#logs-table tbody tr td:nth-child(3)");
  const kvRows = await rowsOf(page, "#logs-table");
  assert.equal(kvRows.length, 16);
  assert.ok(kvRows.every((row) => row[1] === "kv"));
  assert.equal(await textOf(page, "#balance"), String(balance - 16));
  await page.select("#logs-type", "webhook");
  await page.click("#logs-load");
  await page.waitForFunction(() =>
    [...document.querySelectorAll("#logs-table tbody tr td:nth-child(2)")]
      .every((c: any) => c.textContent === "webhook")
  );
  assert.equal((await rowsOf(page, "#logs-table")).length, 2);
}

async function showsWebhooksAndSettings({ page, receiver }: Visit) {
  await page.click("#webhooks-load");
  await page.waitForSelector("#webhooks-list h3");
  const cards = await page.$$eval(
    "#webhooks-list > li",
    (items: any[]) => items.map((i) => i.textContent ?? ""),
  );
  assert.equal(cards.length, 2);
  assert.match(cards[0], /inbox.*Mailboxr_[a-z0-9]+@.*Stateactive/s);
  assert.match(cards[1], /nightly.*Schedule0 3 \* \* \* \(Europe\/Rome\).*Stateactive/s);
  await page.click('li[data-webhook="inbox"] button::-p-text(Deliveries)');
  await page.waitForSelector('li[data-webhook="inbox"] .delivery-list');
  assert.match(
    await textOf(page, 'li[data-webhook="inbox"] .deliveries'),
    /email: delivered, 1 attempt\(s\).*: 200 in \d+ ms/,
  );
  await page.click('li[data-webhook="inbox"] .delivery-list button::-p-text(Retry)');
  await statusSays(page, /queued again/);
  await receiver.waitFor(2, STEP_TIMEOUT_MS);
  assert.equal(receiver.received[1].headers["webhook-id"], receiver.received[0].headers["webhook-id"]);

  assert.equal(await page.$eval("#settings-form", (f: any) => f.hidden), true);
  await page.click("#settings-load");
  await page.waitForSelector("#settings-form:not([hidden])");
  assert.equal(await page.$eval("#settings-threshold", (e: any) => e.value), "0");
}

async function fitsDesktopAndPhone({ page, shots }: Visit) {
  await page.screenshot({ path: `${shots}/desktop.png`, fullPage: true });
  await page.setViewport({ width: 375, height: 812 });
  await page.waitForFunction(() => document.documentElement.scrollWidth <= 375);
  // The chart is drawn again at the phone's width once the resize settles.
  await page.waitForFunction(() => document.querySelector("#usage-chart svg").viewBox.baseVal.width <= 375);
  await page.screenshot({ path: `${shots}/phone.png`, fullPage: true });
  assert.ok((await Deno.stat(`${shots}/phone.png`)).size > 10_000);
  console.log(`Dashboard screenshots: ${shots}`);
  await page.setViewport({ width: 1280, height: 900 });
}

async function explainsRefusals({ svc, page }: Visit) {
  await page.click("#token-forget");
  await page.type("#token-input", "not-a-real-token-0000");
  await page.click("#token-open");
  assert.match(await statusSays(page, /Unauthorized/), /token is unknown or was deactivated/);

  const empty = walletClient(svc, await newToken(svc));
  for (let i = 0; i < 100; i++) await empty.get("/kv/b/drain");
  await page.click("#token-forget");
  await page.type("#token-input", empty.token);
  await page.click("#token-open");
  await statusSays(page, /Free views loaded/);
  assert.equal(await textOf(page, "#balance"), "0");
  await page.click("#webhooks-load");
  assert.match(await statusSays(page, /Insufficient credits/), /free views still work/);

  for (let i = 0; i < 30; i++) await empty.get("/token/usage?days=1");
  await page.reload();
  assert.match(await statusSays(page, /Too many requests/), /Try again in \d+ seconds/);
}

Deno.test({
  name: chromium ? "the dashboard in headless Chromium" : "the dashboard in headless Chromium " +
    "(skipped: no chromium on the PATH nor CHROMIUM_PATH; .ci/run installs Debian's chromium)",
  ignore: !chromium,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const svc = await startService({
      smtp: true,
      env: { LOG_REQUESTS: "1", UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" },
    });
    const receiver = startReceiver();
    const chrome = await launchChromium(chromium!).catch(async (error) => {
      await svc.dispose();
      await receiver.close();
      throw error;
    });
    try {
      const page = await chrome.browser.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const { problems, origins } = watch(page);
      await page.setViewport({ width: 1280, height: 900 });
      const shots = await Deno.makeTempDir({ prefix: "dashboard-screenshots-" });
      const visit: Visit = { svc, page, shots, receiver, ...await seededWallet(svc, receiver) };

      await t.step(
        "a token typed by keyboard opens the free views: balance, chart, ledger",
        () => opensByKeyboard(visit),
      );
      await t.step(
        "the token is in sessionStorage only: not in the URL, a cookie or the log",
        () => keepsTokenInTab(visit),
      );
      await t.step(
        "the ledger pages back and forth, each balance following from the one before",
        () => pagesLedger(visit),
      );
      await t.step(
        "call logs load on request, filtered by type, and cost what the button says",
        () => filtersLogs(visit),
      );
      await t.step("webhooks and alert settings load on request", () => showsWebhooksAndSettings(visit));
      await t.step(
        "screenshots of a desktop and a 375-pixel phone, which it fits",
        () => fitsDesktopAndPhone(visit),
      );
      await t.step("401, 402 and 429 get clear messages", () => explainsRefusals(visit));

      assert.deepEqual(problems, []);
      assert.deepEqual([...origins], [svc.url], "every request went to the service");
    } finally {
      await chrome.close();
      await svc.dispose();
      await receiver.close();
    }
  },
});
