// No input can fail a batch (issue 21): a U+0000 or an unpaired surrogate, sent every way it can
// arrive (a raw body byte, a JSON escape, a percent-escape in the path or the query, an object key,
// an MCP argument), is a 400 billed at the route's price that changes nothing, and no phrase carries
// what the client sent raw. On the code before, each of these failed the ledger's batch: a 500.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type Answer, call, newToken, walletClient } from "./helpers/client.ts";
import { type Service, startService } from "./helpers/service.ts";
import { signStripePayload } from "../src/payments/stripe_signature.ts";
import { isStorable, UNSTORABLE_RULE } from "../src/storable_text.ts";
import { encodeCursor } from "../src/kv/listing.ts";

const NUL = "\u0000";
const LONE = "\ud800";
const EMOJI = "\u{1F600}";
const RULE = UNSTORABLE_RULE;
const SECRET = "whsec_poison_test_secret";
const URL_A = "https://hooks.example.com/a";

/** The answer is the billed 400 of `phrase` at `cost` (null: before authentication, not billed). */
function assertRefused(answer: Answer, phrase: string | RegExp, cost: number | null = 1) {
  const { status, text } = answer;
  assert.deepEqual([status, answer.cost], [400, cost], `${status} ${text}`);
  if (typeof phrase === "string") assert.equal(text, phrase);
  else assert.match(text, phrase);
  // deno-lint-ignore no-control-regex
  const raw = /[\u0000-\u001f]/;
  assert.ok(isStorable(text) && !raw.test(text), `the phrase is escaped: ${JSON.stringify(text)}`);
}

async function post(svc: Service, path: string, body: BodyInit, headers: Record<string, string> = {}) {
  const res = await fetch(svc.url + path, { method: "POST", body, headers });
  const text = await res.text();
  const cost = res.headers.get("x-cost");
  return { status: res.status, text, cost: cost === null ? null : Number(cost) } as Answer;
}

async function mcpClient(svc: Service, token: string): Promise<Client> {
  const client = new Client({ name: "poison-test", version: "1.0.0" });
  const headers = { "x-token": token };
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { requestInit: { headers } }),
  );
  return client;
}

async function tool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, any>> {
  const result = await client.callTool({ name, arguments: args });
  return { ...(result.structuredContent as Record<string, any>), isError: result.isError === true };
}

Deno.test("no input can fail a batch", async (t) => {
  const svc = await startService({ env: { PAYMENT_WEBHOOK_SECRET: SECRET } });
  const clients: Client[] = [];
  const payment = async (token: string, id: string) => {
    const body = JSON.stringify({
      id,
      type: "checkout.session.completed",
      data: { object: { client_reference_id: token, payment_status: "paid", metadata: { tier: "1" } } },
    });
    const signature = await signStripePayload(body, SECRET, new Date());
    return await post(svc, "/payments/webhook", body, { "stripe-signature": signature });
  };
  try {
    const token = await newToken(svc);
    const client = walletClient(svc, token);
    const json = (method: "POST" | "PUT" | "PATCH", path: string, value: unknown) =>
      call(svc, method, path, { token, body: JSON.stringify(value) });

    await t.step("a payment whose event id storage refuses is a 400 and adds nothing", async () => {
      assertRefused(await payment(token, `evt_${NUL}`), `Invalid body.id: ${RULE}`, null);
      assertRefused(await payment(token, `evt_${LONE}`), `Invalid body.id: ${RULE}`, null);
      assert.equal((await client.get("/token")).json().wallet, 99, "nothing was credited");
      // Credits for the rest of the session.
      assert.equal((await payment(token, "evt_poison_session")).status, 200);
    });

    await t.step("a KV value with U+0000 is a billed 400; the stored value stays", async () => {
      assert.equal((await client.post("/kv/b/k", "before")).status, 200);
      for (const bytes of [[0x61, 0x00, 0x62], [0x00]]) {
        const answer = await post(svc, "/kv/b/k", new Uint8Array(bytes), { "x-token": token });
        assertRefused(answer, `Invalid value: ${RULE}`);
      }
      const keyed = await post(svc, "/kv/b/k", new Uint8Array([0]), {
        "x-token": token,
        "idempotency-key": "v1",
      });
      assertRefused(keyed, `Invalid value: ${RULE}`);
      assert.equal((await client.get("/kv/b/k")).text, "before");
    });

    await t.step("an increment refused for a stored text never quotes half a pair", async () => {
      const word = "a".repeat(39) + EMOJI + "b";
      assert.equal((await client.post("/kv/b/word", word)).status, 200);
      const refused = await client.post("/kv/b/word/incr");
      assert.deepEqual([refused.status, refused.cost], [409, 1], refused.text);
      assert.ok(refused.text.startsWith(`Cannot increment "${"a".repeat(39)}${EMOJI}…": `), refused.text);
      assert.equal((await client.get("/kv/b/word")).text, word);
    });

    await t.step("a cursor storage refuses, or one cut inside a pair, is a billed 400", async () => {
      assertRefused(await client.get("/kv/b?cursor=%00"), `Invalid cursor "\\u0000": ${RULE}`);
      const split = "a".repeat(59) + EMOJI;
      assertRefused(
        await client.get(`/kv/b?cursor=${encodeURIComponent(split)}`),
        `Invalid cursor "${
          "a".repeat(40)
        }…": must be a nextCursor of a listing of the same bucket and prefix`,
      );
      // A well-formed cursor that resumes after a key no one could have stored.
      const forged = encodeCursor("b", "", NUL);
      assertRefused(
        await client.get(`/kv/b?cursor=${forged}`),
        /^Invalid cursor "[A-Za-z0-9_-]+…?": must be/,
      );
      assertRefused(
        await client.get(`/webhook/w/deliveries?cursor=${encodeURIComponent("a".repeat(39) + EMOJI)}`),
        `Invalid cursor "${"a".repeat(39)}${EMOJI}": must be a nextCursor of this list`,
      );
    });

    await t.step("every path and query parameter with %00 is a 400 at its route's price", async () => {
      const cases: [string, string, number, string | RegExp][] = [
        ["GET", "/kv/%00/k", 1, "Invalid bucket: must not contain control characters"],
        ["GET", "/kv/b/%00", 1, "Invalid key: must not contain control characters"],
        ["POST", "/kv/b/%ED%A0%80", 1, 'Invalid path "/kv/b/%ED%A0%80": percent-escapes must be valid UTF-8'],
        ["GET", "/kv/b?prefix=%00", 1, "Invalid prefix: must not contain control characters"],
        ["GET", "/kv/b?limit=%00", 1, /^Invalid limit: /],
        ["POST", "/kv/b/k?ttl=%00", 1, /^Invalid ttl: /],
        ["POST", "/kv/b/k/incr?by=%00", 1, /^Invalid by: /],
        ["GET", "/token/logs?n=%00", 1, /^Invalid n: /],
        ["GET", "/token/logs?type=%00", 1, /^Invalid type: /],
        ["GET", "/token/ledger?cursor=%00", 0, /^Invalid cursor: /],
        ["GET", "/token/usage?days=%00", 0, /^Invalid days: /],
        ["GET", "/token/usage?format=%00", 0, /^Invalid format: /],
        ["GET", "/recharge?amount=%00", 0, /^Invalid amount: /],
        ["DELETE", "/token/keys/a%00", 1, `Invalid id "a\\u0000": ${RULE}`],
        ["GET", "/webhook/%00", 1, /^Invalid webhookId: /],
        ["GET", "/webhook/w/deliveries?cursor=%00", 1, `Invalid cursor "\\u0000": ${RULE}`],
        ["GET", "/webhook/w/deliveries?status=%00", 1, /^Invalid status: /],
        ["GET", "/webhook/w/deliveries/%00", 1, /^Invalid deliveryId: /],
      ];
      for (const [method, path, cost, phrase] of cases) {
        assertRefused(await call(svc, method, path, { token }), phrase, cost);
      }
      assert.equal((await client.get("/kv/b/k")).text, "before");
    });

    await t.step("webhook bodies: every field, at any depth, names included", async () => {
      assert.equal((await json("POST", "/webhook", { url: URL_A, webhookId: "w" })).status, 200);
      const before = (await client.get("/webhook")).json();
      const deep = { list: [{ deep: { x: NUL } }] };
      const cases: [unknown, string][] = [
        [{ url: URL_A, webhookId: "t", format: "telegram", options: { chat_id: NUL } }, "options.chat_id"],
        [
          { url: URL_A, webhookId: "t", format: "telegram", options: { [`a${LONE}`]: "1" } },
          'options."a\\ud800"',
        ],
        [{ url: URL_A, webhookId: "c", format: "custom", template: { text: LONE } }, "template.text"],
        [{ url: URL_A, webhookId: "c", format: "custom", template: deep }, "template.list.0.deep.x"],
        [
          { url: URL_A, webhookId: "c", format: "custom", template: { [`k${NUL}`]: "v" } },
          'template."k\\u0000"',
        ],
        [{ url: URL_A, webhookId: "h", headers: { "X-A": `a${NUL}` } }, "headers.X-A"],
        [{ url: URL_A, webhookId: "h", headers: { [`X${LONE}`]: "v" } }, 'headers."X\\ud800"'],
        [{ url: `${URL_A}${NUL}`, webhookId: "u" }, "url"],
        [{ url: URL_A, webhookId: `w${NUL}` }, "webhookId"],
        [
          { url: URL_A, webhookId: "s", schedule: { cron: `0 9 * * *${NUL}`, timezone: "UTC" } },
          "schedule.cron",
        ],
        [
          { url: URL_A, webhookId: "s", schedule: { cron: "0 9 * * *", timezone: LONE } },
          "schedule.timezone",
        ],
        [{ url: URL_A, webhookId: "x", [`x${NUL}`]: 1 }, '"x\\u0000"'],
      ];
      for (const [body, field] of cases) {
        assertRefused(await json("POST", "/webhook", body), `Invalid ${field}: ${RULE}`);
      }
      // However deep it hides, the phrase names a bounded path.
      const nested = `{"url":"${URL_A}","webhookId":"d","format":"custom","template":` +
        `${'{"a":'.repeat(30_000)}"\\u0000"${"}".repeat(30_000)}}`;
      assertRefused(
        await call(svc, "POST", "/webhook", { token, body: nested }),
        `Invalid template.${"a.".repeat(7)}…: ${RULE}`,
      );
      const replaced = { url: URL_A, format: "custom", template: { text: NUL } };
      assertRefused(await json("PUT", "/webhook/w", replaced), `Invalid template.text: ${RULE}`);
      assertRefused(
        await json("PATCH", "/webhook/w", { options: { chat_id: LONE } }),
        `Invalid options.chat_id: ${RULE}`,
      );
      assertRefused(
        await json("PATCH", "/webhook/w", { schedule: { cron: NUL } }),
        `Invalid schedule.cron: ${RULE}`,
      );
      assert.deepEqual((await client.get("/webhook")).json(), before, "nothing was created or changed");
    });

    await t.step("an unknown field name is escaped in the phrase, whatever it holds", async () => {
      const answer = await json("POST", "/webhook", { url: URL_A, "x\n": 1 });
      assertRefused(answer, 'Unknown field: "x\\u000a"');
      const many = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`f${i}`, i]));
      assertRefused(
        await json("POST", "/webhook", { url: URL_A, ...many }),
        "Unknown fields: f0, f1, f2, f3, f4, …",
      );
    });

    await t.step("settings, scoped keys and recover bodies refuse it too; nothing changes", async () => {
      const settings = { low_balance_threshold: 5, low_balance_email: "ops@example.com" };
      assert.equal((await json("PUT", "/token/settings", settings)).status, 200);
      const template = { url: URL_A, format: "custom", template: { text: NUL } };
      assertRefused(
        await json("PUT", "/token/settings", { low_balance_threshold: 5, low_balance_webhook: template }),
        `Invalid low_balance_webhook.template.text: ${RULE}`,
      );
      assertRefused(
        await json("PUT", "/token/settings", { low_balance_email: `a${LONE}@example.com` }),
        `Invalid low_balance_email: ${RULE}`,
      );
      assert.deepEqual((await client.get("/token/settings")).json(), {
        ...settings,
        low_balance_email_confirmed: false,
      });

      assertRefused(
        await json("POST", "/token/keys", { name: `n${LONE}`, scope: "read" }),
        `Invalid name: ${RULE}`,
      );
      assertRefused(
        await json("POST", "/token/keys", { name: "n", scope: "read", buckets: ["ok", NUL] }),
        `Invalid buckets.1: ${RULE}`,
      );
      assert.deepEqual((await client.get("/token/keys")).json(), { keys: [] });

      assertRefused(await json("POST", "/webhook/w/recover", { since: NUL }), `Invalid since: ${RULE}`);
    });

    await t.step("POST /token: a form with U+0000 is a plain 400 before authentication", async () => {
      const headers = {
        "content-type": "application/x-www-form-urlencoded",
        "x-forwarded-for": "203.0.113.9",
      };
      assertRefused(
        await post(svc, "/token", new Uint8Array([...new TextEncoder().encode("token=new"), 0]), headers),
        `Invalid body: ${RULE}`,
        null,
      );
      assertRefused(await post(svc, "/token", "token=new%00", headers), 'Invalid token: must be "new"', null);
    });

    await t.step("MCP tool arguments: a billed tool error exactly like REST's 400", async () => {
      const mcp = await mcpClient(svc, token);
      clients.push(mcp);
      const refusals: [string, Record<string, unknown>, string][] = [
        ["kv_set", { bucket: "b", key: "k", value: `x${NUL}` }, `Invalid value: ${RULE}`],
        ["kv_set", { bucket: "b", key: "k", value: LONE }, `Invalid value: ${RULE}`],
        ["kv_set", { bucket: "b", key: `k${LONE}`, value: "v" }, `Invalid key "k\\ud800": ${RULE}`],
        ["kv_get", { bucket: LONE, key: "k" }, `Invalid bucket "\\ud800": ${RULE}`],
        ["kv_delete", { bucket: "b", key: LONE }, `Invalid key "\\ud800": ${RULE}`],
        ["kv_incr", { bucket: LONE, key: "k" }, `Invalid bucket "\\ud800": ${RULE}`],
        ["kv_list", { bucket: "b", cursor: NUL }, `Invalid cursor "\\u0000": ${RULE}`],
        ["kv_list", { bucket: "b", prefix: LONE }, `Invalid prefix "\\ud800": ${RULE}`],
      ];
      for (const [name, args, phrase] of refusals) {
        const result = await tool(mcp, name, args);
        assert.deepEqual(
          [result.isError, result.status, result.error, result.cost],
          [true, 400, phrase, 1],
          name,
        );
      }
      assert.equal((await tool(mcp, "kv_get", { bucket: "b", key: "k" })).result, "before");
    });

    await t.step("a scoped key refused a bucket storage cannot hold gets its billed 403", async () => {
      const made = await json("POST", "/token/keys", { name: "only", scope: "read", buckets: ["only"] });
      const key = made.json().key;
      const rest = await call(svc, "GET", "/kv/%00/k", { token: key });
      assert.deepEqual([rest.status, rest.cost], [403, 1], rest.text);
      assert.ok(isStorable(rest.text));
      const mcp = await mcpClient(svc, key);
      clients.push(mcp);
      const result = await tool(mcp, "kv_get", { bucket: LONE, key: "k" });
      assert.deepEqual([result.isError, result.status, result.cost], [true, 403, 1], result.error);
    });

    await t.step("every refusal is in the call log; none was a fault", async () => {
      const logs = (await client.get("/token/logs?n=100")).json().logs as {
        status_code: number;
        error?: string;
      }[];
      assert.ok(logs.length >= 60, `${logs.length} entries`);
      assert.ok(logs.every((entry) => entry.status_code < 500), "no 5xx");
      const unknown = logs.find((entry) => entry.error === `Invalid "x\\u0000": ${RULE}`);
      assert.ok(unknown, "the refused name is kept escaped");
      assert.doesNotMatch(svc.output(), /request failed|tool call failed/);
    });
  } finally {
    for (const mcp of clients) await mcp.close();
    await svc.dispose();
  }
});
