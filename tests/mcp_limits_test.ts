// What the free MCP tool and malformed requests cost: wallet_balance is limited per wallet like the
// free REST views (30 a minute, then a tool error saying Too Many Requests and when to retry) and
// answered by the ledger in a batch, with no query of its own; `arguments: null` and other
// malformed params get -32602 with a short phrase, and arguments of the wrong type a short tool
// error, never a validation dump.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { type Service, startService } from "./helpers/service.ts";
import { countedApp } from "./helpers/counted_app.ts";

const mcpHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function connect(svc: Service, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "mcp-limits-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { requestInit: { headers } }),
  );
  return client;
}

function textOf(result: { content?: unknown }): string {
  return (result.content as { text: string }[])[0].text;
}

let ids = 0;
const toolCall = (params: unknown) => ({ jsonrpc: "2.0", id: ++ids, method: "tools/call", params });

Deno.test("MCP: the free tool is limited, malformed requests get short phrases", async (t) => {
  const svc = await startService();
  const clients: Client[] = [];
  try {
    const token = await newToken(svc);
    const owner = walletClient(svc, token);
    const rpc = async (body: unknown) => {
      const res = await call(svc, "POST", "/mcp", { token, body: JSON.stringify(body), headers: mcpHeaders });
      return { status: res.status, body: res.json() };
    };

    await t.step(
      "wallet_balance: 30 calls a minute per wallet, then Too Many Requests and when",
      async () => {
        const client = await connect(svc, { "x-token": token });
        clients.push(client);
        for (let i = 0; i < 30; i++) {
          const result = await client.callTool({ name: "wallet_balance", arguments: {} });
          assert.equal(result.isError, undefined, `call ${i + 1}: ${textOf(result)}`);
          assert.deepEqual(result.structuredContent, { balance: 100, cost: 0 });
        }
        const limited = await client.callTool({ name: "wallet_balance", arguments: {} });
        assert.equal(limited.isError, true);
        const wait = /^Too Many Requests: retry after (\d+) s$/.exec(textOf(limited));
        assert.ok(wait, textOf(limited));
        assert.ok(Number(wait[1]) >= 1 && Number(wait[1]) <= 60, `retry after ${wait[1]} s`);
        assert.equal((await owner.get("/token/logs")).json().n, 0, "nothing logged, nothing charged");
      },
    );

    await t.step("a scoped key shares its wallet's limit; another wallet has its own", async () => {
      const made = (await owner.postJson("/token/keys", { name: "agent", scope: "read" })).json();
      const keyed = await connect(svc, { authorization: `Bearer ${made.key}` });
      clients.push(keyed);
      const limited = await keyed.callTool({ name: "wallet_balance", arguments: {} });
      assert.match(textOf(limited), /^Too Many Requests: retry after \d+ s$/);
      const other = await connect(svc, { "x-token": await newToken(svc) });
      clients.push(other);
      const free = await other.callTool({ name: "wallet_balance", arguments: {} });
      assert.deepEqual(free.structuredContent, { balance: 100, cost: 0 });
    });

    await t.step("arguments: null and other malformed params: -32602 with a short phrase", async () => {
      const cases: [unknown, string][] = [
        [
          { name: "wallet_balance", arguments: null },
          "Invalid params: arguments must be an object, not null",
        ],
        [{ name: "kv_get", arguments: [] }, "Invalid params: arguments must be an object, not an array"],
        [{ name: "kv_get", arguments: "x" }, "Invalid params: arguments must be an object, not a string"],
        [{ name: 5 }, "Invalid params: name must be a string, not a number"],
        [{ arguments: {} }, "Invalid params: name is required"],
        [null, "Invalid params: params must be an object, not null"],
        [
          { name: "no_such_tool", arguments: {} },
          "Invalid params: name must be one of kv_get, kv_set, kv_delete, kv_incr, kv_list, usage_summary, " +
          "wallet_balance",
        ],
      ];
      for (const [params, phrase] of cases) {
        const request = toolCall(params);
        const answer = await rpc(request);
        assert.equal(answer.status, 200);
        assert.deepEqual(answer.body, {
          jsonrpc: "2.0",
          id: request.id,
          error: { code: -32602, message: phrase },
        }, JSON.stringify(params));
      }
      const init = await rpc({ jsonrpc: "2.0", id: 77, method: "initialize", params: { capabilities: 3 } });
      assert.equal(init.body.error.code, -32602);
      assert.doesNotMatch(init.body.error.message, /[[{\n]/, "a phrase, not a dump");
    });

    await t.step(
      "in a batch, the malformed request gets its error and the others their answers",
      async () => {
        const bad = toolCall({ name: "kv_get", arguments: null });
        const answer = await rpc([bad, { jsonrpc: "2.0", id: "p", method: "ping" }]);
        assert.equal(answer.status, 200);
        assert.deepEqual(answer.body, [
          {
            jsonrpc: "2.0",
            id: bad.id,
            error: { code: -32602, message: "Invalid params: arguments must be an object, not null" },
          },
          { jsonrpc: "2.0", id: "p", result: {} },
        ]);
      },
    );

    await t.step("arguments of the wrong type: a short tool error, free", async () => {
      const before = (await owner.get("/token")).balance!;
      const request = toolCall({ name: "kv_get", arguments: { bucket: 1, key: "k" } });
      const answer = await rpc(request);
      assert.deepEqual(answer.body, {
        jsonrpc: "2.0",
        id: request.id,
        result: {
          content: [{ type: "text", text: "Invalid arguments: bucket must be a string, not a number" }],
          isError: true,
        },
      });
      const missing = await rpc(toolCall({ name: "kv_set", arguments: { bucket: "b", key: "k" } }));
      assert.equal(missing.body.result.content[0].text, "Invalid arguments: value is required");
      assert.equal((await owner.get("/token")).json().wallet, before - 1, "only the GET /token was charged");
    });

    await t.step("the HTTP rules still come first", async () => {
      const res = await call(svc, "POST", "/mcp", {
        token,
        body: JSON.stringify(toolCall({ name: "kv_get", arguments: null })),
        headers: { "content-type": "application/json" },
      });
      assert.equal(res.status, 406, "Accept must list both types");
    });
  } finally {
    for (const client of clients) await client.close();
    await svc.dispose();
  }
});

Deno.test("wallet_balance makes no query of its own: the ledger answers it in a batch", async () => {
  const app = await countedApp();
  try {
    const created = await app.fetch("/token", {
      method: "POST",
      body: "token=new",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      from: "198.51.100.30",
    });
    const token = await created.text();
    const balance = async () => {
      const res = await app.fetch("/mcp", {
        method: "POST",
        headers: { ...mcpHeaders, "x-token": token },
        body: JSON.stringify(toolCall({ name: "wallet_balance", arguments: {} })),
        from: "198.51.100.30",
      });
      return (await res.json()).result;
    };
    const queriesBefore = app.queries();
    const batchesBefore = app.batches();
    const CALLS = 20;
    const results = await Promise.all(Array.from({ length: CALLS }, balance));
    for (const result of results) assert.deepEqual(result.structuredContent, { balance: 100, cost: 0 });
    assert.equal(app.queries() - queriesBefore, 0, "no query outside the ledger");
    const batches = app.batches();
    assert.equal(batches.calls - batchesBefore.calls, CALLS, "every call went through a ledger batch");
    // Sent together, they share batches (at most two transactions are in flight at once).
    assert.ok(batches.batches - batchesBefore.batches < CALLS, `${batches.batches} batches`);
  } finally {
    await app.close();
  }
});
