// The webhook forms in headless Chromium cover every setting the API takes: a telegram webhook made
// with its chat_id, edited to another chat_id and an extra header (only what changed is sent, and the
// service holds it), a template that is not JSON refused by the page, one the service refuses shown
// with the service's 400 phrase and nothing changed; axe finds no serious or critical violation on the
// open edit form. A webhook's deliveries are paged with the API's cursor and filtered by status, each
// page the one the API answers.
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import { type Service, startService } from "./helpers/service.ts";
import {
  type AxeViolation,
  axeViolations,
  clearStatus,
  findChromium,
  launchChromium,
  statusSays,
  STEP_TIMEOUT_MS,
  textOf,
} from "./helpers/browser.ts";
import { newToken, walletClient } from "./helpers/client.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

const chromium = findChromium();

/** Replaces an input's text, as a user selecting it all and typing would. */
async function typeInto(page: Page, selector: string, text: string) {
  await page.$eval(selector, (e: any) => (e.value = ""));
  await page.type(selector, text);
}

/** axe's serious and critical violations. */
const seriousOf = (found: AxeViolation[]) =>
  found.filter((v) => v.impact === "serious" || v.impact === "critical");

/** The page opened with a new wallet's token, typed as a user would. */
async function openWithToken(page: Page, svc: Service, token: string) {
  await page.goto(svc.url + "/");
  await page.waitForSelector("body[data-ready]");
  await page.type("#token-input", token);
  await page.keyboard.press("Enter");
  await statusSays(page, /Free views loaded/);
}

/** The requests the page sent with `method` to `path`, as their bodies. */
function sentBodies(page: Page) {
  const bodies: { method: string; path: string; body: unknown }[] = [];
  page.on("request", (request) => {
    const data = request.postData();
    bodies.push({
      method: request.method(),
      path: new URL(request.url()).pathname,
      body: data ? JSON.parse(data) : undefined,
    });
  });
  return bodies;
}

async function telegramMadeAndEdited(page: Page, svc: Service, receiver: Receiver, token: string) {
  const sent = sentBodies(page);
  const client = walletClient(svc, token);
  await typeInto(page, "#wh-id", "chat");
  await typeInto(page, "#wh-url", `${receiver.url}/tg`);
  await page.select("#wh-format", "telegram");
  assert.equal(await page.$eval("#wh-chat-id", (e: any) => e.offsetParent !== null), true, "chat_id shown");
  assert.equal(await page.$eval("#wh-template", (e: any) => e.offsetParent === null), true, "no template");
  // Without its chat_id the service refuses it, in its own words.
  await clearStatus(page);
  await page.click("#wh-create");
  assert.match(await statusSays(page, /400/), /options\.chat_id: required for format "telegram"/);
  await typeInto(page, "#wh-chat-id", "-1001");
  await page.click("#wh-attachments");
  await clearStatus(page);
  await page.click("#wh-create");
  await statusSays(page, /Webhook chat created\./);
  const made = (await client.get("/webhook/chat")).json();
  assert.equal(made.format, "telegram");
  assert.deepEqual(made.options, { chat_id: "-1001" });
  assert.equal(made.includeAttachments, true);
  assert.deepEqual(made.headers, {});

  // Edit: another chat_id and a header; only those are sent, and the service holds them.
  await page.waitForSelector('li[data-webhook="chat"]');
  const edit = await page.$$('li[data-webhook="chat"] .controls button');
  const labels = await Promise.all(edit.map((b) => b.evaluate((e: any) => e.textContent)));
  await edit[labels.indexOf("Edit")].click();
  assert.equal(
    await page.$eval("#edit-chat-id-chat", (e: any) => e.value),
    "-1001",
    "the form shows the chat_id",
  );
  assert.equal(await page.$eval("#edit-attachments-chat", (e: any) => e.checked), true);
  await typeInto(page, "#edit-chat-id-chat", "-1002");
  await page.click("#edit-header-add-chat");
  await page.keyboard.type("X-Env");
  await typeInto(page, "#edit-header-value-0-chat", "staging");
  const save = 'li[data-webhook="chat"] form button[type=submit]';
  await clearStatus(page);
  await page.click(save);
  await statusSays(page, /chat saved\./);
  const patches = sent.filter((r) => r.method === "PATCH" && r.path === "/webhook/chat");
  assert.deepEqual(patches.map((r) => r.body), [{
    options: { chat_id: "-1002" },
    headers: { "X-Env": "staging" },
  }]);
  const edited = (await client.get("/webhook/chat")).json();
  assert.deepEqual(edited.options, { chat_id: "-1002" });
  assert.deepEqual(edited.headers, { "X-Env": "***" }, "the header is held (its value hidden)");
  assert.equal(edited.format, "telegram");
  assert.equal(edited.includeAttachments, true);
  return edited;
}

async function badTemplatesChangeNothing(page: Page, svc: Service, token: string, before: unknown) {
  const client = walletClient(svc, token);
  // The card was replaced by the saved webhook's: open its edit form again.
  const buttons = await page.$$('li[data-webhook="chat"] .controls button');
  const labels = await Promise.all(buttons.map((b) => b.evaluate((e: any) => e.textContent)));
  await buttons[labels.indexOf("Edit")].click();
  assert.deepEqual(seriousOf(await axeViolations(page)), [], "axe on the open edit form");

  await page.select("#edit-format-chat", "custom");
  await typeInto(page, "#edit-template-chat", "{not json");
  const save = 'li[data-webhook="chat"] form button[type=submit]';
  await clearStatus(page);
  await page.click(save);
  assert.match(await statusSays(page, /Invalid template: it is not JSON/), /not JSON/);
  // Valid JSON the service refuses: its 400 phrase is shown, and nothing changes.
  await typeInto(page, "#edit-template-chat", '["not", "an object"]');
  await clearStatus(page);
  await page.click(save);
  const status = await statusSays(page, /400/);
  assert.match(status, /Invalid template: must be a JSON object/);
  assert.deepEqual((await client.get("/webhook/chat")).json(), before);
  // Nothing changed in the form: nothing is sent.
  await page.select("#edit-format-chat", "telegram");
  await clearStatus(page);
  await page.click(save);
  await statusSays(page, /Nothing changed in chat/);
}

/** The delivery ids and statuses the page lists for `webhookId`, newest first. */
function listed(page: Page, webhookId: string) {
  return page.$$eval(
    `li[data-webhook="${webhookId}"] .delivery-list > li`,
    (items: any[]) => items.map((li) => ({ id: li.dataset.delivery, status: li.dataset.status })),
  );
}

/** Clicks a button of a webhook's deliveries area by its label, and waits for the status line. */
async function deliveriesButton(page: Page, webhookId: string, label: string, says: RegExp) {
  await clearStatus(page);
  await page.click(`li[data-webhook="${webhookId}"] .deliveries button::-p-text(${label})`);
  return await statusSays(page, says);
}

/** The deliveries list pages with the API's cursor and filters by status, as the API answers. */
async function deliveriesPageAndFilter(page: Page, svc: Service, token: string) {
  const client = walletClient(svc, token);
  // Every third test is answered 500: the list holds delivered and failed ones.
  const receiver = startReceiver((_, index) => new Response("", { status: index % 3 === 2 ? 500 : 200 }));
  try {
    const made = await client.postJson("/webhook", { webhookId: "many", url: `${receiver.url}/many` });
    assert.equal(made.status, 200, made.text);
    for (let i = 0; i < 12; i++) assert.equal((await client.post("/webhook/many/test")).status, 200);
  } finally {
    await receiver.close();
  }
  const all = (await client.get("/webhook/many/deliveries?limit=100")).json().deliveries
    .map((d: any) => ({ id: d.deliveryId, status: d.status }));
  assert.equal(all.length, 12);

  await clearStatus(page);
  await page.click("#webhooks-load");
  await statusSays(page, /webhook\(s\)\./);
  await clearStatus(page);
  await page.click('li[data-webhook="many"] button::-p-text(Deliveries)');
  await statusSays(page, /10 recent deliveries of many\./);
  assert.deepEqual(await listed(page, "many"), all.slice(0, 10));
  await deliveriesButton(page, "many", "Older", /2 older deliveries of many, page 2\./);
  assert.deepEqual(await listed(page, "many"), all.slice(10));
  assert.equal(
    await page.$('li[data-webhook="many"] .deliveries button::-p-text(Older)[hidden]') !== null,
    true,
  );
  await deliveriesButton(page, "many", "Newer", /10 recent deliveries of many\./);
  assert.deepEqual(await listed(page, "many"), all.slice(0, 10));

  // An expanded payload, with the pager and the filter: axe finds nothing serious or critical.
  await deliveriesButton(page, "many", "Payload", /Payload of /);
  const payload = 'li[data-webhook="many"] .delivery-list > li:first-child pre';
  assert.match(await textOf(page, payload), /^As sent:\n\{/);
  assert.deepEqual(seriousOf(await axeViolations(page)), [], "axe with a payload shown");

  assert.deepEqual([...new Set(all.map((d: any) => d.status))].sort(), ["delivered", "failed"]);
  // Filtered by a status: the page lists exactly the API's rows of that status.
  const status = "failed";
  const only = all.filter((d: any) => d.status === status);
  await page.select("#deliveries-status-many", status);
  await deliveriesButton(
    page,
    "many",
    "Show",
    new RegExp(`${Math.min(only.length, 10)} recent ${status} deliveries`),
  );
  assert.deepEqual(await listed(page, "many"), only.slice(0, 10));
  await page.select("#deliveries-status-many", "abandoned");
  await deliveriesButton(page, "many", "Show", /0 recent abandoned deliveries/);
  assert.match(await textOf(page, 'li[data-webhook="many"] .deliveries'), /No abandoned deliveries/);
}

Deno.test({
  name: "the webhook forms create and edit every setting, and show the service's 400 phrase",
  ignore: chromium === undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const svc = await startService({ env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
    const receiver = startReceiver();
    const { browser, close } = await launchChromium(chromium!);
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(String(error)));
      const token = await newToken(svc);
      await openWithToken(page, svc, token);
      const edited = await telegramMadeAndEdited(page, svc, receiver, token);
      await badTemplatesChangeNothing(page, svc, token, edited);
      await deliveriesPageAndFilter(page, svc, token);
      assert.deepEqual(errors, []);
    } finally {
      await close();
      await receiver.close();
      await svc.dispose();
    }
  },
});
