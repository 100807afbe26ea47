// Strict decoding (issue 10): a text body that is not UTF-8 and a path with a broken
// percent-escape are 400 and change nothing; after authentication they are billed like any bad
// input, before it they cost nothing.
import assert from "node:assert/strict";
import { call, nextClientIp, walletClient } from "./helpers/client.ts";
import { newToken } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";

/** "a", then a lone lead byte of a two-byte sequence: not UTF-8. */
const NOT_UTF8 = new Uint8Array([0x61, 0xc3]);

async function send(
  url: string,
  method: string,
  body: Uint8Array<ArrayBuffer>,
  headers: Record<string, string>,
) {
  const res = await fetch(url, { method, body, headers });
  const text = await res.text();
  const cost = res.headers.get("x-cost");
  return { status: res.status, text, cost: cost === null ? null : Number(cost) };
}

Deno.test("strict decoding of bodies and paths", async (t) => {
  const svc = await startService();
  try {
    const token = await newToken(svc);
    const client = walletClient(svc, token);

    await t.step("a KV value that is not UTF-8 is a billed 400 and is not stored", async () => {
      const answer = await send(`${svc.url}/kv/b/k`, "POST", NOT_UTF8, { "x-token": token });
      assert.deepEqual(answer, { status: 400, text: "Invalid value: must be valid UTF-8", cost: 1 });
      assert.equal((await client.get("/kv/b/k")).status, 404);
      const bom = new Uint8Array([0xef, 0xbb, 0xbf, 0x68, 0xc3, 0xa9]); // BOM + "hé"
      assert.equal((await send(`${svc.url}/kv/b/k`, "POST", bom, { "x-token": token })).status, 200);
      assert.equal((await client.get("/kv/b/k")).text, "hé");
    });

    await t.step("a path with a broken percent-escape is a billed 400 and changes nothing", async () => {
      for (const [path, shown] of [["/kv/b/%ZZ", "/kv/b/%ZZ"], ["/kv/b/a%C3", "/kv/b/a%C3"]]) {
        const before = (await client.get("/token")).json().wallet;
        const write = await client.post(path, "v");
        assert.deepEqual([write.status, write.text, write.cost], [
          400,
          `Invalid path "${shown}": percent-escapes must be valid UTF-8`,
          1,
        ]);
        assert.equal(write.balance, before - 1);
        assert.equal((await client.get(path)).status, 400);
        assert.equal((await client.delete(path)).status, 400);
      }
      const webhook = await client.get("/webhook/a%E2%82");
      assert.deepEqual([webhook.status, webhook.cost], [400, 1]);
    });

    await t.step("a%C3 and a%25C3 are no longer the same key", async () => {
      assert.equal((await client.post("/kv/b/a%25C3", "escaped percent")).status, 200);
      assert.equal((await client.get("/kv/b/a%25C3")).text, "escaped percent");
      assert.equal((await client.get("/kv/b/a%C3")).status, 400);
      assert.equal((await client.get("/kv/b/a%C3%A9")).status, 404, "a valid escape names another key");
    });

    await t.step("without a token: 401 where the route needs one, else a free 400", async () => {
      const anonymous = await call(svc, "GET", "/kv/b/%ZZ");
      assert.deepEqual([anonymous.status, anonymous.cost], [401, null]);
      const unknown = await call(svc, "GET", "/nowhere%ZZ");
      assert.deepEqual([unknown.status, unknown.cost], [400, null]);
      assert.equal(unknown.text, 'Invalid path "/nowhere%ZZ": percent-escapes must be valid UTF-8');
    });

    await t.step("JSON that is not UTF-8 is a billed 400; nothing is created", async () => {
      const json = new Uint8Array([
        ...new TextEncoder().encode('{"url":"https://example.com/'),
        0xff,
        0x22,
        0x7d,
      ]);
      const headers = { "x-token": token, "content-type": "application/json" };
      const created = await send(`${svc.url}/webhook`, "POST", json, headers);
      assert.deepEqual(created, { status: 400, text: "Invalid body: must be valid UTF-8", cost: 1 });
      assert.deepEqual((await client.get("/webhook")).json().webhooks, []);
      const settings = await send(`${svc.url}/token/settings`, "PUT", json, headers);
      assert.deepEqual([settings.status, settings.cost], [400, 1]);
    });

    await t.step("a form that is not UTF-8 gets no token and costs nothing", async () => {
      const form = new Uint8Array([...new TextEncoder().encode("token=new&x="), 0xc3, 0x28]);
      const answer = await send(`${svc.url}/token`, "POST", form, {
        "content-type": "application/x-www-form-urlencoded",
        "x-forwarded-for": nextClientIp(),
      });
      assert.deepEqual(answer, { status: 400, text: "Invalid body: must be valid UTF-8", cost: null });
    });
  } finally {
    await svc.dispose();
  }
});
