// `.` and `..` as a bucket or key name mean the same through REST and MCP (issue 24 item 6): both
// refuse them, with the same billed 400 and phrase, because in a URL path they are steps, not names.
// Before, MCP wrote them and REST could never reach them, and `GET /kv/%2E/k` answered bucket `k`.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { closedWithin, openRaw } from "./helpers/raw_http.ts";

/** A request sent as written, so no client folds its dot segments away. */
async function raw(port: number, method: string, path: string, token: string): Promise<[number, string]> {
  const connection = await openRaw(port);
  await connection.write(
    `${method} ${path} HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\nContent-Length: 1\r\nConnection: close\r\n\r\nv`,
  );
  await closedWithin(connection, 10_000);
  connection.close();
  const text = connection.received();
  return [connection.status() ?? 0, text.slice(text.indexOf("\r\n\r\n") + 4)];
}

Deno.test("dot names: REST and MCP refuse them alike", async (t) => {
  const svc = await startService();
  let client: Client | undefined;
  try {
    const token = await newToken(svc);
    const wallet = walletClient(svc, token);
    assert.equal((await wallet.post("/kv/k/x", "listed")).status, 200);
    client = new Client({ name: "dots", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), {
        requestInit: { headers: { "x-token": token } },
      }),
    );

    const cases: [string, string, string, string][] = [
      ["bucket", ".", "k", 'Invalid bucket: must not be "." or ".."'],
      ["bucket", "..", "k", 'Invalid bucket: must not be "." or ".."'],
      ["key", "b", ".", 'Invalid key: must not be "." or ".."'],
      ["key", "b", "..", 'Invalid key: must not be "." or ".."'],
    ];
    for (const [what, bucket, key, phrase] of cases) {
      await t.step(`${what} ${JSON.stringify(bucket === "b" ? key : bucket)}`, async () => {
        const escaped = (name: string) => name.replaceAll(".", "%2E");
        for (
          const [method, path] of [
            ["GET", `/kv/${escaped(bucket)}/${escaped(key)}`],
            ["POST", `/kv/${escaped(bucket)}/${escaped(key)}`],
            ["GET", `/kv/${bucket}/${key}`],
            ["DELETE", `/kv/${bucket.replaceAll(".", "%2e")}/${key}`],
          ]
        ) {
          assert.deepEqual(await raw(svc.port, method, path, token), [400, phrase], `${method} ${path}`);
        }
        for (
          const [name, args] of [
            ["kv_get", { bucket, key }],
            ["kv_set", { bucket, key, value: "v" }],
            ["kv_delete", { bucket, key }],
          ] as const
        ) {
          const result = await client!.callTool({ name, arguments: args });
          const structured = result.structuredContent as Record<string, unknown>;
          assert.equal(result.isError, true, name);
          assert.deepEqual([structured.status, structured.error], [400, phrase], name);
        }
      });
    }

    await t.step(
      "a bucket listing is refused alike, and `%2E` no longer answers another bucket",
      async () => {
        assert.deepEqual(await raw(svc.port, "GET", "/kv/%2E", token), [
          400,
          'Invalid bucket: must not be "." or ".."',
        ]);
        const listed = await client!.callTool({ name: "kv_list", arguments: { bucket: "." } });
        assert.equal(
          (listed.structuredContent as Record<string, unknown>).error,
          'Invalid bucket: must not be "." or ".."',
        );
        const [status, body] = await raw(svc.port, "GET", "/kv/%2E/k", token);
        assert.equal(status, 400);
        assert.doesNotMatch(body, /listed|"x"/);
      },
    );

    await t.step("names that only contain dots are names", async () => {
      for (const name of ["...", ".a", "a.", ".-"]) {
        assert.equal((await wallet.post(`/kv/b/${encodeURIComponent(name)}`, "v")).status, 200, name);
        const got = await client!.callTool({ name: "kv_get", arguments: { bucket: "b", key: name } });
        assert.equal((got.structuredContent as Record<string, unknown>).result, "v", name);
      }
    });
  } finally {
    await client?.close();
    await svc.dispose();
  }
});
