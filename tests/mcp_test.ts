// The MCP server driven by the official SDK's own client over real HTTP: initialize, list the tools,
// call each one, and find the wallet charged and the calls logged exactly as for REST.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { type Service, startService } from "./helpers/service.ts";

async function connect(svc: Service, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { requestInit: { headers } }),
  );
  return client;
}

/** A tool call's structured result. */
async function tool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Record<string, any>> {
  const result = await client.callTool({ name, arguments: args });
  return {
    ...(result.structuredContent as Record<string, any>),
    isError: result.isError === true,
    raw: result,
  };
}

const mcpHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" };

Deno.test("MCP server", async (t) => {
  const svc = await startService();
  const clients: Client[] = [];
  try {
    const token = await newToken(svc);
    const owner = walletClient(svc, token);

    await t.step("initialize and list the tools with X-Token; the protocol is free", async () => {
      const client = await connect(svc, { "x-token": token });
      clients.push(client);
      assert.equal(client.getServerVersion()?.name, "credit-api");
      type Listed = {
        name: string;
        description?: string;
        inputSchema: { properties?: object; required?: string[] };
      };
      const tools = (await client.listTools()).tools as Listed[];
      assert.deepEqual(tools.map((x) => x.name).sort(), [
        "kv_delete",
        "kv_get",
        "kv_incr",
        "kv_list",
        "kv_set",
        "usage_summary",
        "wallet_balance",
      ]);
      const set = tools.find((x) => x.name === "kv_set")!;
      assert.deepEqual(Object.keys(set.inputSchema.properties ?? {}).sort(), [
        "bucket",
        "ifMatch",
        "key",
        "ttl",
        "value",
      ]);
      assert.deepEqual(set.inputSchema.required?.sort(), ["bucket", "key", "value"]);
      assert.match(set.description ?? "", /Costs 1 credit/);
      const balance = await tool(client, "wallet_balance");
      assert.deepEqual([balance.balance, balance.cost], [100, 0]);
      assert.equal((await owner.get("/token/logs")).json().n, 0, "nothing logged, nothing charged");
    });

    await t.step("each KV tool is billed and logged exactly like its REST call", async () => {
      const client = clients[0];
      const set = await tool(client, "kv_set", { bucket: "b", key: "k", value: "hello", ttl: 60 });
      assert.deepEqual({ ...set, raw: undefined }, {
        status: 200,
        result: "OK",
        cost: 1,
        balance: 99,
        isError: false,
        raw: undefined,
      });
      const got = await tool(client, "kv_get", { bucket: "b", key: "k" });
      assert.deepEqual([got.status, got.result, got.cost, got.balance, got.isError], [
        200,
        "hello",
        1,
        98,
        false,
      ]);
      assert.equal(JSON.parse((got.raw.content as any)[0].text).result, "hello", "the text says the same");
      const rest = await owner.get("/kv/b/k");
      assert.deepEqual([rest.text, rest.cost, rest.balance], ["hello", 1, 97], "REST sees the tool's write");
      const removed = await tool(client, "kv_delete", { bucket: "b", key: "k" });
      assert.deepEqual([removed.status, removed.result, removed.balance], [200, "OK", 96]);
      const missing = await tool(client, "kv_get", { bucket: "b", key: "k" });
      assert.deepEqual([missing.isError, missing.status, missing.error, missing.cost, missing.balance], [
        true,
        404,
        "Key Not Found",
        1,
        95,
      ]);
      assert.match(
        (missing.raw.content as any)[0].text,
        /^Key Not Found \(status 404, cost 1, balance 95\)$/,
      );
      const logs = (await owner.get("/token/logs?n=5")).json().logs;
      assert.deepEqual(
        logs.map((l: any) => [l.method, l.path, l.endpoint, l.status_code, l.cost, l.balance]),
        [
          ["GET", "/kv/b/k", "kv", 404, 1, 95],
          ["DELETE", "/kv/b/k", "kv", 200, 1, 96],
          ["GET", "/kv/b/k", "kv", 200, 1, 97],
          ["GET", "/kv/b/k", "kv", 200, 1, 98],
          ["POST", "/kv/b/k?ttl=60", "kv", 200, 1, 99],
        ],
      );
    });

    await t.step("kv_incr, kv_list and kv_set with ifMatch are billed and logged like REST", async () => {
      const client = clients[0];
      const before = (await tool(client, "wallet_balance")).balance;
      const one = await tool(client, "kv_incr", { bucket: "count", key: "hits" });
      const six = await tool(client, "kv_incr", { bucket: "count", key: "hits", by: 5, ttl: 60 });
      assert.deepEqual([one.result, six.result, six.cost, six.balance], ["1", "6", 1, before - 2]);
      assert.equal((await owner.get("/kv/count/hits")).text, "6", "REST reads the counter");
      const notNumber = await tool(client, "kv_set", { bucket: "count", key: "word", value: "abc" });
      const refused = await tool(client, "kv_incr", { bucket: "count", key: "word" });
      assert.deepEqual([notNumber.status, refused.isError, refused.status, refused.cost], [
        200,
        true,
        409,
        1,
      ]);

      const page = await tool(client, "kv_list", { bucket: "count", limit: 1 });
      assert.equal(page.status, 200);
      assert.deepEqual(page.result.keys.map((k: any) => k.key), ["hits"]);
      assert.equal(typeof page.result.nextCursor, "string");
      const rest = await tool(client, "kv_list", { bucket: "count", cursor: page.result.nextCursor });
      assert.deepEqual([rest.result.keys.map((k: any) => k.key), rest.result.nextCursor], [["word"], null]);
      const badCursor = await tool(client, "kv_list", { bucket: "count", cursor: "nope" });
      assert.deepEqual([badCursor.status, badCursor.cost], [400, 1]);
      assert.match(badCursor.error, /^Invalid cursor "nope"/);

      const read = await tool(client, "kv_get", { bucket: "count", key: "word" });
      assert.match(read.etag, /^"\d+"$/, "a read answers the ETag");
      const guarded = await tool(client, "kv_set", {
        bucket: "count",
        key: "word",
        value: "v2",
        ifMatch: read.etag,
      });
      assert.equal(guarded.status, 200);
      const stale = await tool(client, "kv_set", {
        bucket: "count",
        key: "word",
        value: "v3",
        ifMatch: read.etag,
      });
      assert.deepEqual([stale.isError, stale.status, stale.cost], [true, 412, 1]);
      assert.match(stale.error, /^Precondition Failed/);
      const fresh = (await tool(client, "kv_get", { bucket: "count", key: "word" })).etag;
      const bare = await tool(client, "kv_set", {
        bucket: "count",
        key: "word",
        value: "v3",
        ifMatch: fresh.replaceAll('"', ""),
      });
      assert.equal(bare.status, 200, "a bare version is the same ETag");
      assert.equal((await owner.get("/kv/count/word")).text, "v3");
      const logs = (await owner.get("/token/logs?n=14")).json().logs.reverse();
      assert.deepEqual(logs.map((l: any) => `${l.method} ${l.path} ${l.status_code}`), [
        "POST /kv/count/hits/incr 200",
        "POST /kv/count/hits/incr?by=5&ttl=60 200",
        "GET /kv/count/hits 200",
        "POST /kv/count/word 200",
        "POST /kv/count/word/incr 409",
        "GET /kv/count?limit=1 200",
        `GET /kv/count?cursor=${encodeURIComponent(page.result.nextCursor)} 200`,
        "GET /kv/count?cursor=nope 400",
        "GET /kv/count/word 200",
        "POST /kv/count/word 200",
        "POST /kv/count/word 412",
        "GET /kv/count/word 200",
        "POST /kv/count/word 200",
        "GET /kv/count/word 200",
      ]);
      assert.ok(logs.every((l: any) => l.endpoint === "kv" && l.cost === 1));
    });

    await t.step("a field rule broken is the REST 400, billed; a value REST escapes is escaped", async () => {
      const client = clients[0];
      const ttl = await tool(client, "kv_set", { bucket: "b", key: "k", value: "v", ttl: 1.5 });
      assert.deepEqual([ttl.isError, ttl.status, ttl.error, ttl.cost], [
        true,
        400,
        "Invalid ttl: must be an integer from 0 to 2592000",
        1,
      ]);
      const bucket = await tool(client, "kv_get", { bucket: "reserved-x", key: "k" });
      assert.deepEqual([bucket.status, bucket.error], [
        400,
        'Invalid bucket: must not start with "reserved-"',
      ]);
      const long = await tool(client, "kv_set", { bucket: "b", key: "k", value: "x".repeat(1001) });
      assert.deepEqual([long.status, long.error], [400, "Invalid value: must be at most 1000 characters"]);
      await tool(client, "kv_set", { bucket: "b", key: "a b?", value: "spaced" });
      assert.equal((await owner.get("/kv/b/a%20b%3F")).text, "spaced");
      const wrongType = await client.callTool({ name: "kv_get", arguments: { bucket: 1 } });
      assert.equal(wrongType.isError, true, "arguments of the wrong type are refused by the protocol, free");
    });

    await t.step("a scoped key with Authorization: Bearer: its rules hold, its calls name it", async () => {
      await owner.post("/kv/shared/note", "read me");
      const made =
        (await owner.postJson("/token/keys", { name: "agent", scope: "read", buckets: ["shared"] }))
          .json();
      const client = await connect(svc, { authorization: `Bearer ${made.key}` });
      clients.push(client);
      const read = await tool(client, "kv_get", { bucket: "shared", key: "note" });
      assert.deepEqual([read.status, read.result, read.cost], [200, "read me", 1]);
      const listed = await tool(client, "kv_list", { bucket: "shared" });
      assert.deepEqual(listed.result.keys.map((k: any) => k.key), ["note"]);
      const counted = await tool(client, "kv_incr", { bucket: "shared", key: "n" });
      assert.deepEqual([counted.status, counted.cost], [403, 1]);
      const write = await tool(client, "kv_set", { bucket: "shared", key: "note", value: "x" });
      assert.deepEqual([write.isError, write.status, write.cost], [true, 403, 1]);
      assert.match(write.error, /is read-only/);
      const other = await tool(client, "kv_get", { bucket: "b", key: "k" });
      assert.deepEqual([other.status, other.cost], [403, 1]);
      const balance = await tool(client, "wallet_balance");
      assert.deepEqual(balance.key, { id: made.id, scope: "read", spent: 5 });
      const logs = (await owner.get("/token/logs?n=5")).json().logs;
      assert.ok(logs.every((l: any) => l.keyId === made.id), "every call names the key");

      assert.equal((await owner.delete(`/token/keys/${made.id}`)).status, 200);
      const revoked = await tool(client, "kv_get", { bucket: "shared", key: "note" });
      assert.equal(revoked.isError, true);
      assert.equal((revoked.raw.content as any)[0].text, "Key revoked");
    });

    await t.step("usage_summary is /token/usage over MCP: free, the same days, limited alike", async () => {
      const client = clients[0];
      const before = (await tool(client, "wallet_balance")).balance;
      const summary = await tool(client, "usage_summary", { days: 2 });
      assert.deepEqual([summary.status, summary.cost, summary.balance], [200, 0, before]);
      const rest = (await owner.get("/token/usage?days=2")).json();
      const today = (days: any[]) => days.at(-1).byType;
      assert.equal(summary.result.days.length, 2);
      assert.ok(today(summary.result.days).kv.credits > 0, "the KV tool calls are in today's usage");
      assert.deepEqual(today(summary.result.days).kv, today(rest.days).kv, "the same counts as REST");
      const bad = await tool(client, "usage_summary", { days: 91 });
      assert.deepEqual([bad.isError, bad.status, bad.cost], [true, 400, 0]);
      assert.match(bad.error, /^Invalid days: must be an integer from 1 to 90/);
      const logged = (await owner.get("/token/logs?n=3&type=token&views=include")).json().logs;
      assert.ok(logged.some((l: any) => l.path === "/token/usage?days=2"), "logged like the REST view");

      const made = (await owner.postJson("/token/keys", { name: "reader", scope: "read" })).json();
      const keyed = await connect(svc, { authorization: `Bearer ${made.key}` });
      clients.push(keyed);
      const forbidden = await tool(keyed, "usage_summary");
      assert.deepEqual([forbidden.isError, forbidden.status, forbidden.cost], [true, 403, 0]);
      assert.match(forbidden.error, /needs the wallet token/);

      let limited: Record<string, any> | undefined;
      for (let i = 0; i < 31 && !limited; i++) {
        const answer = await tool(client, "usage_summary", { days: 1 });
        if (answer.status === 429) limited = answer;
      }
      assert.ok(limited, "the 30-a-minute limit of the free views holds over MCP");
      assert.deepEqual([limited.isError, limited.cost], [true, 0]);
      assert.equal((await owner.get("/token/ledger")).status, 429, "one limit for REST and MCP");
    });

    await t.step("an empty wallet's tool calls are 402, charged nothing", async () => {
      const poor = walletClient(svc, await newToken(svc));
      for (let i = 0; i < 100; i++) await poor.get("/kv/b/none");
      const client = await connect(svc, { "x-token": poor.token });
      clients.push(client);
      const refused = await tool(client, "kv_get", { bucket: "b", key: "k" });
      assert.deepEqual([refused.isError, refused.status, refused.error, refused.cost, refused.balance], [
        true,
        402,
        "Insufficient credits",
        0,
        0,
      ]);
      assert.equal((await tool(client, "wallet_balance")).balance, 0, "the free tool still answers");
    });

    await t.step("without a valid token the client cannot connect", async () => {
      await assert.rejects(connect(svc, { "x-token": "not-a-real-token-at-all" }));
      await assert.rejects(connect(svc, {}));
    });

    await t.step("bad HTTP input follows the rules of every route", async () => {
      const post = (body: string, headers: Record<string, string> = mcpHeaders) =>
        call(svc, "POST", "/mcp", { token, body, headers });
      const notJson = await post("{nope");
      assert.equal(notJson.status, 400);
      assert.equal(notJson.json().error.code, -32700);
      const notRpc = await post('{"hello": 1}');
      assert.equal(notRpc.status, 400);
      const tooLarge = await post(JSON.stringify({ pad: "x".repeat(70_000) }));
      assert.equal(tooLarge.status, 413);
      assert.equal(tooLarge.headers.get("x-cost"), null, "never billed");
      const plain = await post('{"jsonrpc":"2.0","id":1,"method":"ping"}', {
        "content-type": "application/json",
      });
      assert.equal(plain.status, 406, "Accept must list both types");
      const ping = await post('{"jsonrpc":"2.0","id":1,"method":"ping"}');
      assert.deepEqual([ping.status, ping.json().result], [200, {}]);
      for (const method of ["GET", "DELETE"]) {
        const res = await call(svc, method, "/mcp", { token });
        assert.deepEqual([res.status, res.headers.get("allow")], [405, "POST"]);
      }
    });
  } finally {
    for (const client of clients) await client.close();
    await svc.dispose();
  }
});
