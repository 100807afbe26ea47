// The `Stripe-Signature` check of `POST /payments/webhook`, against node:crypto as the reference HMAC.

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { signStripePayload, verifyStripeSignature } from "../src/payments/stripe_signature.ts";

const SECRET = "whsec_test_5f2b8c1d";
const NOW = new Date("2026-03-01T12:00:00.000Z");
const NOW_SECONDS = NOW.getTime() / 1000;
const BODY = JSON.stringify({
  id: "evt_1",
  type: "checkout.session.completed",
  data: { object: { client_reference_id: "abc", metadata: { tier: "1" } } },
  note: "Grüße 👋",
});

function v1(timestamp: number, body: string, secret = SECRET): string {
  return createHmac("sha256", secret).update(`${timestamp}.${body}`, "utf8").digest("hex");
}

Deno.test("a header from signStripePayload is valid and matches the reference HMAC", async () => {
  const header = await signStripePayload(BODY, SECRET, NOW);
  assert.equal(header, `t=${NOW_SECONDS},v1=${v1(NOW_SECONDS, BODY)}`);
  assert.equal(await verifyStripeSignature(header, BODY, { secret: SECRET, now: NOW }), null);
});

Deno.test("a header signed with another secret has no matching v1 signature", async () => {
  const header = await signStripePayload(BODY, "whsec_other", NOW);
  assert.equal(
    await verifyStripeSignature(header, BODY, { secret: SECRET, now: NOW }),
    "Invalid Stripe-Signature: no matching v1 signature",
  );
});

Deno.test("an altered body has no matching v1 signature", async () => {
  const header = await signStripePayload(BODY, SECRET, NOW);
  assert.equal(
    await verifyStripeSignature(header, BODY.replace('"1"', '"3"'), { secret: SECRET, now: NOW }),
    "Invalid Stripe-Signature: no matching v1 signature",
  );
});

Deno.test("the timestamp must be within 300 seconds either side", async () => {
  const signedAt = (offsetSeconds: number) => new Date(NOW.getTime() + offsetSeconds * 1000);
  for (const offset of [-300, 300]) {
    const header = await signStripePayload(BODY, SECRET, signedAt(offset));
    assert.equal(
      await verifyStripeSignature(header, BODY, { secret: SECRET, now: NOW }),
      null,
      `${offset} s`,
    );
  }
  for (const offset of [-301, 301]) {
    const header = await signStripePayload(BODY, SECRET, signedAt(offset));
    assert.equal(
      await verifyStripeSignature(header, BODY, { secret: SECRET, now: NOW }),
      "Invalid Stripe-Signature: timestamp outside the tolerance",
      `${offset} s`,
    );
  }
  const old = await signStripePayload(BODY, SECRET, signedAt(-600));
  assert.equal(
    await verifyStripeSignature(old, BODY, { secret: SECRET, now: NOW, toleranceSeconds: 900 }),
    null,
  );
});

Deno.test("a missing or blank header is missing", async () => {
  for (const header of [null, "", "  "]) {
    assert.equal(
      await verifyStripeSignature(header, BODY, { secret: SECRET, now: NOW }),
      "Invalid Stripe-Signature: missing",
    );
  }
});

Deno.test("a header that is not t=...,v1=... pairs is malformed", async () => {
  const signature = v1(NOW_SECONDS, BODY);
  for (
    const header of [
      "garbage",
      `v1=${signature}`,
      `t=,v1=${signature}`,
      `t=abc,v1=${signature}`,
      `t=-${NOW_SECONDS},v1=${signature}`,
      `t=${NOW_SECONDS}.5,v1=${signature}`,
      `t=${NOW_SECONDS},t=${NOW_SECONDS},v1=${signature}`,
      `t=${NOW_SECONDS},v1=${signature},`,
      `t=${NOW_SECONDS},=x,v1=${signature}`,
      `t=${NOW_SECONDS},v1=${signature},v0=${"0".repeat(4096)}`,
    ]
  ) {
    assert.equal(
      await verifyStripeSignature(header, BODY, { secret: SECRET, now: NOW }),
      "Invalid Stripe-Signature: malformed",
      header.slice(0, 80),
    );
  }
});

Deno.test("a header without any v1 entry has no matching v1 signature", async () => {
  assert.equal(
    await verifyStripeSignature(`t=${NOW_SECONDS},v0=${v1(NOW_SECONDS, BODY)}`, BODY, {
      secret: SECRET,
      now: NOW,
    }),
    "Invalid Stripe-Signature: no matching v1 signature",
  );
});

Deno.test("any one matching v1 among several entries and schemes is enough", async () => {
  const valid = v1(NOW_SECONDS, BODY);
  const header = [
    `t=${NOW_SECONDS}`,
    `v1=${v1(NOW_SECONDS, BODY, "whsec_rolled_over")}`,
    "v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39",
    `v1=${valid.slice(0, 10)}`,
    ` v1=${valid} `,
  ].join(",");
  assert.equal(await verifyStripeSignature(header, BODY, { secret: SECRET, now: NOW }), null);
  // Hex is compared as sent; the provider sends lowercase.
  assert.equal(
    await verifyStripeSignature(`t=${NOW_SECONDS},v1=${valid.toUpperCase()}`, BODY, {
      secret: SECRET,
      now: NOW,
    }),
    "Invalid Stripe-Signature: no matching v1 signature",
  );
});

Deno.test("a stale header with a wrong signature reports the signature, not the clock", async () => {
  const header = await signStripePayload(BODY, "whsec_other", new Date(NOW.getTime() - 3_600_000));
  assert.equal(
    await verifyStripeSignature(header, BODY, { secret: SECRET, now: NOW }),
    "Invalid Stripe-Signature: no matching v1 signature",
  );
});

Deno.test("an empty secret is a wiring fault and throws", async () => {
  const header = await signStripePayload(BODY, SECRET, NOW);
  await assert.rejects(() => verifyStripeSignature(header, BODY, { secret: "", now: NOW }));
});
