// The payment provider confirms checkouts; each confirmation credits its wallet exactly once.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { auditOf, startService } from "./helpers/service.ts";
import { signStripePayload } from "../src/payments/stripe_signature.ts";

const SECRET = "whsec_test_payment_secret";

function checkout(token: string, options: { id?: string; tier?: string; type?: string } = {}) {
  return JSON.stringify({
    id: options.id ?? `evt_${crypto.randomUUID()}`,
    type: options.type ?? "checkout.session.completed",
    data: {
      object: {
        client_reference_id: token,
        payment_status: "paid",
        metadata: options.tier === undefined ? { tier: "1" } : { tier: options.tier },
      },
    },
  });
}

Deno.test("payment confirmations", async (t) => {
  const svc = await startService({ env: { PAYMENT_WEBHOOK_SECRET: SECRET } });
  const deliver = async (body: string, signature?: string | null) =>
    call(svc, "POST", "/payments/webhook", {
      body,
      headers: {
        "content-type": "application/json",
        ...(signature === null
          ? {}
          : { "stripe-signature": signature ?? await signStripePayload(body, SECRET, new Date()) }),
      },
    });
  try {
    const token = await newToken(svc);
    const client = walletClient(svc, token);

    await t.step("tier 1 adds 1,000,000 credits, tier 3 adds 3,000,000", async () => {
      const one = await deliver(checkout(token, { tier: "1" }));
      assert.deepEqual([one.status, one.text], [200, "OK"]);
      assert.equal((await client.get("/token")).json().wallet, 1_000_099);
      assert.equal((await deliver(checkout(token, { tier: "3" }))).status, 200);
      assert.equal((await client.get("/token")).json().wallet, 4_000_098);
    });

    await t.step("the payment shows in the call log", async () => {
      const logs = (await client.get("/token/logs?type=payment&n=10")).json().logs;
      assert.equal(logs.length, 2);
      assert.deepEqual(logs.map((l: any) => [l.endpoint, l.cost, l.balance]), [
        ["payment", 0, 4_000_099],
        ["payment", 0, 1_000_100],
      ]);
    });

    await t.step("a replayed event adds nothing, even 10 deliveries at once", async () => {
      const body = checkout(token, { id: "evt_replayed" });
      const before = (await client.get("/token")).json().wallet;
      const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(body)));
      assert.ok(answers.every((a) => a.status === 200 && a.text === "OK"));
      assert.equal((await client.get("/token")).json().wallet, before - 1 + 1_000_000);
      assert.equal((await deliver(body)).status, 200);
      assert.equal((await client.get("/token")).json().wallet, before - 2 + 1_000_000);
    });

    await t.step(
      "bad, stale or missing signatures and altered bodies are 400 and change nothing",
      async () => {
        const before = (await client.get("/token")).json().wallet;
        const body = checkout(token);
        const cases: [string, string | null, RegExp][] = [
          [body, await signStripePayload(body, "whsec_wrong", new Date()), /no matching v1 signature/],
          [
            body,
            await signStripePayload(body, SECRET, new Date(Date.now() - 301_000)),
            /outside the tolerance/,
          ],
          [body, null, /missing/],
          [body, "t=abc", /malformed/],
          [
            body.replace('"tier":"1"', '"tier":"3"'),
            await signStripePayload(body, SECRET, new Date()),
            /no matching/,
          ],
        ];
        for (const [sent, signature, phrase] of cases) {
          const res = await deliver(sent, signature);
          assert.equal(res.status, 400);
          assert.match(res.text, /^Invalid Stripe-Signature: /);
          assert.match(res.text, phrase);
        }
        assert.equal((await client.get("/token")).json().wallet, before - 1);
      },
    );

    await t.step("unknown token, unknown tier and malformed bodies are 400", async () => {
      const unknown = await deliver(checkout("nobody-has-this-token"));
      assert.deepEqual([unknown.status, unknown.text], [400, "Invalid client_reference_id: unknown token"]);
      const tier = await deliver(checkout(token, { tier: "2" }));
      assert.deepEqual([tier.status, tier.text], [400, "Invalid metadata.tier: must be 1 or 3"]);
      assert.equal((await deliver("not json")).status, 400);
      assert.equal((await deliver(JSON.stringify({ id: 5 }))).status, 400);
    });

    await t.step("other event types are acknowledged and ignored", async () => {
      const before = (await client.get("/token")).json().wallet;
      assert.equal((await deliver(checkout(token, { type: "payment_intent.created" }))).status, 200);
      assert.equal((await client.get("/token")).json().wallet, before - 1);
    });

    await t.step("the audit is clean", async () => {
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout);
    });
  } finally {
    await svc.dispose();
  }
});

Deno.test("without PAYMENT_WEBHOOK_SECRET payments are off", async () => {
  const svc = await startService();
  try {
    const res = await call(svc, "POST", "/payments/webhook", { body: "{}" });
    assert.deepEqual([res.status, res.text], [503, "Payments are not configured"]);
  } finally {
    await svc.dispose();
  }
});
