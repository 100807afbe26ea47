// A user's first session: create a token, look at the wallet, ask for a recharge link.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { sha256Hex } from "../src/ids.ts";

const form = { "content-type": "application/x-www-form-urlencoded" };

Deno.test("tokens and wallets", async (t) => {
  const svc = await startService({ env: { RECHARGE_LINK_3: "https://pay.example.com/pro?plan=3" } });
  try {
    await t.step("POST /token answers a fresh 32-character token with 100 credits", async () => {
      const res = await call(svc, "POST", "/token", {
        body: "token=new",
        headers: { ...form, "x-forwarded-for": "203.0.113.10" },
      });
      assert.equal(res.status, 200);
      assert.match(res.text, /^[a-z0-9]{32}$/);
      const wallet = await walletClient(svc, res.text).get("/token");
      assert.equal(wallet.status, 200);
      const body = wallet.json();
      assert.equal(body.wallet, 99);
      assert.equal(body.hash, await sha256Hex(res.text));
      assert.ok(Math.abs(Date.parse(body.created) - Date.now()) < 60_000);
      assert.equal(wallet.cost, 1);
      assert.equal(wallet.balance, 99);
    });

    await t.step("a second token from the same address within 10 s is 429 with Retry-After", async () => {
      const headers = { ...form, "x-forwarded-for": "203.0.113.11" };
      assert.equal((await call(svc, "POST", "/token", { body: "token=new", headers })).status, 200);
      const again = await call(svc, "POST", "/token", { body: "token=new", headers });
      assert.equal(again.status, 429);
      assert.equal(again.text, "Too Many Requests");
      const wait = Number(again.headers.get("retry-after"));
      assert.ok(wait >= 1 && wait <= 10, `Retry-After ${wait}`);
      const other = await call(svc, "POST", "/token", {
        body: "token=new",
        headers: { ...form, "x-forwarded-for": "203.0.113.12" },
      });
      assert.equal(other.status, 200, "another address is not limited");
    });

    await t.step("concurrent token requests from one address: exactly one wins", async () => {
      const headers = { ...form, "x-forwarded-for": "203.0.113.13" };
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => call(svc, "POST", "/token", { body: "token=new", headers })),
      );
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 429, 429, 429, 429, 429, 429, 429]);
    });

    await t.step("POST /token without token=new is 400 and does not use up the rate limit", async () => {
      const headers = { ...form, "x-forwarded-for": "203.0.113.14" };
      for (const body of ["", "token=old", "tokens=new"]) {
        const res = await call(svc, "POST", "/token", { body, headers });
        assert.equal(res.status, 400, body);
        assert.match(res.text, /^Invalid token: /);
      }
      assert.equal((await call(svc, "POST", "/token", { body: "token=new", headers })).status, 200);
    });

    await t.step("a JSON body with the same field works too", async () => {
      const res = await call(svc, "POST", "/token", {
        body: JSON.stringify({ token: "new" }),
        headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.15" },
      });
      assert.equal(res.status, 200);
      assert.match(res.text, /^[a-z0-9]{32}$/);
    });

    await t.step("missing, short or unknown tokens are 401 and cost nothing", async () => {
      for (const token of [undefined, "", "short", "x".repeat(32)]) {
        const res = await call(svc, "GET", "/token", { token });
        assert.equal(res.status, 401);
        assert.equal(res.text, "Unauthorized");
        assert.equal(res.headers.get("x-cost"), null);
      }
    });

    await t.step("GET /recharge answers the tier's link with the token, free", async () => {
      const token = await newToken(svc);
      const client = walletClient(svc, token);
      const one = await client.get("/recharge");
      assert.equal(one.status, 200);
      assert.equal(one.text, `https://buy.stripe.com/test_tier1?client_reference_id=${token}`);
      assert.equal(one.cost, 0);
      assert.equal(one.balance, 100);
      const three = await client.get("/recharge?amount=3");
      assert.equal(three.text, `https://pay.example.com/pro?plan=3&client_reference_id=${token}`);
      const bad = await client.get("/recharge?amount=2");
      assert.equal(bad.status, 400);
      assert.equal(bad.text, "Invalid amount: must be 1 or 3");
      assert.equal(bad.cost, 0);
      assert.equal((await client.get("/token")).json().wallet, 99);
    });

    await t.step("an empty wallet gets 402 and the call changes nothing", async () => {
      const client = walletClient(svc, await newToken(svc));
      for (let i = 0; i < 100; i++) assert.equal((await client.get("/kv/b/missing")).status, 404);
      const empty = await client.get("/token");
      assert.equal(empty.status, 402);
      assert.equal(empty.text, "Insufficient credits");
      assert.equal(empty.cost, 0);
      assert.equal(empty.balance, 0);
      const link = await client.get("/recharge");
      assert.equal(link.status, 200, "the recharge link stays free and reachable");
    });
  } finally {
    await svc.dispose();
  }
});
