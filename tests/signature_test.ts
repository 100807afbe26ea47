// Standard Webhooks signatures, checked against the reference `standardwebhooks` verifier.

import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { newWebhookSecret, signatureHeaders } from "../src/webhooks/signature.ts";

Deno.test("a new secret is whsec_ plus base64 of 32 random bytes", () => {
  const secret = newWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.equal(atob(secret.slice("whsec_".length)).length, 32);
  assert.notEqual(newWebhookSecret(), secret);
});

Deno.test("the signature verifies with the standardwebhooks package", async () => {
  const secret = newWebhookSecret();
  const body = JSON.stringify({ type: "email.received", subject: "Grüße 👋", text: "line\nbreak" });
  const headers = await signatureHeaders(secret, { messageId: "msg_2b7c9e", timestamp: new Date(), body });
  assert.equal(headers["webhook-id"], "msg_2b7c9e");
  assert.match(headers["webhook-timestamp"], /^\d+$/);
  assert.match(headers["webhook-signature"], /^v1,[A-Za-z0-9+/]{43}=$/);
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
});

Deno.test("the signature equals the reference implementation's", async () => {
  const secret = newWebhookSecret();
  const at = new Date("2026-03-01T12:34:56.789Z");
  const headers = await signatureHeaders(secret, { messageId: "msg_1", timestamp: at, body: '{"a":1}' });
  assert.equal(headers["webhook-timestamp"], "1772368496");
  assert.equal(headers["webhook-signature"], new Webhook(secret).sign("msg_1", at, '{"a":1}'));
});

Deno.test("a tampered body, id or timestamp fails verification", async () => {
  const secret = newWebhookSecret();
  const body = '{"amount":1}';
  const headers = await signatureHeaders(secret, { messageId: "msg_1", timestamp: new Date(), body });
  const webhook = new Webhook(secret);
  assert.throws(() => webhook.verify('{"amount":2}', headers));
  assert.throws(() => webhook.verify(body, { ...headers, "webhook-id": "msg_2" }));
  const earlier = String(Number(headers["webhook-timestamp"]) - 1);
  assert.throws(() => webhook.verify(body, { ...headers, "webhook-timestamp": earlier }));
  assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers));
});

Deno.test("invalid secrets and message ids are rejected without echoing the secret", async () => {
  await assert.rejects(
    () => signatureHeaders("whsec_", { messageId: "msg_1", timestamp: new Date(), body: "{}" }),
    { message: 'Invalid webhook secret: must be "whsec_" followed by base64' },
  );
  await assert.rejects(
    () => signatureHeaders("whsec_not base64!", { messageId: "msg_1", timestamp: new Date(), body: "{}" }),
    (error: Error) => !error.message.includes("not base64"),
  );
  await assert.rejects(
    () => signatureHeaders(newWebhookSecret(), { messageId: "a.b", timestamp: new Date(), body: "{}" }),
    /message id/,
  );
  await assert.rejects(
    () => signatureHeaders(newWebhookSecret(), { messageId: "m", timestamp: new Date(NaN), body: "{}" }),
    /timestamp/,
  );
});
