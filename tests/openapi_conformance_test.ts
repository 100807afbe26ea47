// Every answer of representative user sessions keeps /openapi.json, as an independent validator
// (Stoplight Prism, tests/helpers/openapi_check.ts) sees it: KV, tokens, logs, webhooks and their
// deliveries, ledger and usage, keys, settings, MCP, and the errors 400, 401, 402, 404, 405, 409,
// 412 and 429.
import assert from "node:assert/strict";
import { call, newToken, startRecording, stopRecording, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { answersViolating } from "./helpers/openapi_check.ts";

type Client = ReturnType<typeof walletClient>;

async function kvSession(kv: Client) {
  await kv.post("/kv/shop/apple?ttl=3600", "red");
  const read = await kv.get("/kv/shop/apple");
  await kv.post("/kv/shop/apple", "green", { "if-match": read.headers.get("etag")! });
  await kv.post("/kv/shop/apple", "blue", { "if-match": '"1"' }); // 412
  await kv.post("/kv/shop/counter/incr?by=5");
  await kv.post("/kv/shop/apple/incr"); // 409: not an integer
  await kv.get("/kv/shop?prefix=a&limit=1");
  await kv.get("/kv/shop/missing"); // 404
  await kv.delete("/kv/shop/apple");
  await kv.get("/kv/reserved-x/a"); // 400
  await kv.post("/kv/shop/a?ttl=2592001", "x"); // 400
  await kv.get("/kv/shop/apple", { accept: "application/problem+json" }); // 404 as problem JSON
  await kv.put("/kv/shop/apple", "x"); // 405
}

async function tokenSession(wallet: Client) {
  await wallet.get("/token");
  await wallet.get("/recharge?amount=3");
  await wallet.get("/token/logs?n=3&type=kv");
  await wallet.get("/token/logs?n=101"); // 400
  await wallet.get("/token/ledger?limit=2");
  const first = await wallet.get("/token/ledger?limit=1");
  await wallet.get(`/token/ledger?limit=1&cursor=${first.json().nextCursor}`);
  await wallet.get("/token/usage?days=7");
  await wallet.get("/token/usage?days=7&format=csv");
  await wallet.get("/token/settings");
  await wallet.put("/token/settings", JSON.stringify({ low_balance_threshold: 10 }));
}

async function webhookSession(wallet: Client, receiverUrl: string) {
  await wallet.postJson("/webhook", { webhookId: "orders", url: receiverUrl, format: "slack" });
  await wallet.postJson("/webhook", { webhookId: "orders", url: receiverUrl }); // 409
  await wallet.postJson("/webhook", {
    webhookId: "nightly",
    url: receiverUrl,
    schedule: { cron: "0 3 * * *", timezone: "Europe/Paris" },
  });
  await wallet.get("/webhook");
  await wallet.get("/webhook/orders");
  await wallet.patch("/webhook/orders", JSON.stringify({ active: false }), {
    "content-type": "application/json",
  });
  await wallet.put("/webhook/orders", JSON.stringify({ url: receiverUrl, headers: { "X-Team": "a" } }));
  await wallet.post("/webhook/orders/test");
  const page = await wallet.get("/webhook/orders/deliveries?limit=5");
  const deliveryId = page.json().deliveries[0]?.deliveryId;
  if (deliveryId) {
    await wallet.get(`/webhook/orders/deliveries/${deliveryId}`);
    await wallet.post(`/webhook/orders/deliveries/${deliveryId}/retry`); // 409: a test
  }
  const since = new Date(Date.now() - 3600_000).toISOString();
  await wallet.postJson("/webhook/orders/recover", { since });
  await wallet.get("/webhook/nope"); // 404
  await wallet.postJson("/webhook", { url: "https://x.example", headers: { Host: "x" } }); // 400
  await wallet.delete("/webhook/nightly");
  await wallet.delete("/webhook"); // 404: no default
}

async function keySession(service: { url: string }, wallet: Client) {
  const created = await wallet.postJson("/token/keys", { name: "reader", scope: "read", buckets: ["shop"] });
  const key = walletClient(service as never, created.json().key);
  await key.get("/kv/shop/counter");
  await key.post("/kv/shop/counter", "1"); // 403
  await key.get("/token/keys"); // 403
  await wallet.get("/token/keys");
  await wallet.delete(`/token/keys/${created.json().id}`);
  await key.get("/kv/shop/counter"); // 401: revoked
}

async function publicSession(service: { url: string }) {
  const svc = service as never;
  await call(svc, "GET", "/healthz");
  await call(svc, "GET", "/readyz");
  await call(svc, "GET", "/token"); // 401
  await call(svc, "GET", "/token", { token: "not-a-token-at-all" }); // 401
  await call(svc, "GET", "/attachments/a/b?expires=1&sig=x"); // 403
  await call(svc, "POST", "/token", { body: "token=old" }); // 400
  await call(svc, "POST", "/payments/webhook", { body: "{}" }); // 503: payments off
  await call(svc, "GET", "/");
  await call(svc, "GET", "/dashboard/main.js");
}

async function mcpSession(wallet: Client) {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  };
  await wallet.post("/mcp", JSON.stringify(initialize), headers);
  await wallet.post("/mcp", JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }), headers);
  await wallet.post("/mcp", "{", headers); // 400
}

/** Spends the wallet down to a 402, then runs into the free views' limit (429). */
async function limitsSession(wallet: Client) {
  for (let i = 0; i < 40; i++) {
    const logs = await wallet.get("/token/logs?n=100");
    if (logs.status === 402) break;
  }
  await wallet.get("/kv/shop/counter");
  for (let i = 0; i < 40; i++) {
    if ((await wallet.get("/token/usage?days=1")).status === 429) break;
  }
}

Deno.test("every answer of representative sessions keeps the OpenAPI document", async () => {
  const service = await startService({ env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  const receiver = startReceiver();
  try {
    const document = (await call(service, "GET", "/openapi.json")).json();
    const exchanges = startRecording();
    const wallet = walletClient(service, await newToken(service));
    await kvSession(wallet);
    await tokenSession(wallet);
    await webhookSession(wallet, receiver.url);
    await keySession(service, wallet);
    await publicSession(service);
    await mcpSession(wallet);
    await limitsSession(wallet);
    stopRecording();

    const statuses = new Set(exchanges.map((exchange) => exchange.status));
    for (const status of [200, 400, 401, 402, 403, 404, 405, 409, 412, 429]) {
      assert.ok(statuses.has(status), `the sessions met a ${status}`);
    }
    const violations = await answersViolating(document, exchanges);
    const listed = violations.map((v) => `${v.exchange}: ${v.message}`).join("\n");
    assert.equal(violations.length, 0, `${violations.length} answers break the document:\n${listed}`);
  } finally {
    stopRecording();
    await receiver.close();
    await service.dispose();
  }
});
