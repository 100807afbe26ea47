// A delivery that has not been sent yet shows the body it will be sent with (issue 27): a mailbox
// webhook paused by its owner, real mail over SMTP, the held delivery's payload through HTTP,
// rendered in the webhook's format with its attachment links signed; after the resume, the body the
// receiver got. Only the wallet's token sees it: after erasure nothing is shown.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { auditOf, startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { eventually } from "./helpers/wait.ts";

/** A payload without its attachment links, which each rendering signs anew. */
function withoutLinks(payload: any) {
  return {
    ...payload,
    attachments: payload.attachments.map(({ downloadUrl: _u, downloadUrlExpiresAt: _e, ...rest }: any) =>
      rest
    ),
  };
}

Deno.test({
  name: "held delivery: shows the payload it will be sent with, then the one sent",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const endpoint = startReceiver(() => new Response("ok"));
    const svc = await startService({ smtp: true, env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
    try {
      const token = await newToken(svc);
      const client = walletClient(svc, token);
      const hook = (await client.postJson("/webhook", { url: `${endpoint.url}/in`, webhookId: "inbox" }))
        .json();
      const paused = await client.patch("/webhook/inbox", JSON.stringify({ active: false }));
      assert.equal(paused.status, 200, paused.text);

      const sent = await sendMail(svc, {
        to: hook.email,
        subject: "Held one",
        text: "Waiting for the resume",
        attachments: [{ filename: "note.txt", content: "attached words", contentType: "text/plain" }],
      });
      assert.equal(sent.code, 250, sent.response);
      const [listed] = (await client.get("/webhook/inbox/deliveries")).json().deliveries;
      assert.deepEqual([listed.status, listed.attempts, listed.nextAttemptAt], ["paused", [], null]);

      const shown = await client.get(`/webhook/inbox/deliveries/${listed.deliveryId}`);
      assert.deepEqual([shown.status, shown.cost], [200, 1], shown.text);
      const held = shown.json();
      assert.equal(held.payloadSent, false);
      assert.ok(held.payload !== null, "a held delivery shows its payload");
      assert.equal(held.payload.subject, "Held one");
      assert.match(held.payload.text, /Waiting for the resume/);
      assert.deepEqual(held.payload.attachments.map((a: any) => [a.filename, a.size]), [["note.txt", 14]]);
      // Its link is signed like an attempt's: it downloads the file.
      const link = new URL(held.payload.attachments[0].downloadUrl);
      const file = await call(svc, "GET", link.pathname + link.search);
      assert.deepEqual([file.status, file.text], [200, "attached words"]);
      assert.equal(endpoint.received.length, 0, "nothing sent while paused");

      const resumed = await client.patch("/webhook/inbox", JSON.stringify({ active: true }));
      assert.equal(resumed.status, 200, resumed.text);
      const [received] = await endpoint.waitFor(1);
      const body = JSON.parse(received.body);
      assert.deepEqual(withoutLinks(body), withoutLinks(held.payload), "sent as it was shown");
      const delivered = await eventually("the delivery recorded", async () => {
        const view = (await client.get(`/webhook/inbox/deliveries/${listed.deliveryId}`)).json();
        return view.status === "delivered" ? view : undefined;
      });
      assert.equal(delivered.payloadSent, true);
      assert.deepEqual(delivered.payload, body, "the body the receiver got");

      // The format is the webhook's as it is now: a second held mail shows the new format.
      await client.patch("/webhook/inbox", JSON.stringify({ active: false, format: "slack" }));
      await sendMail(svc, { to: hook.email, subject: "Second", text: "In slack form" });
      const second = (await client.get("/webhook/inbox/deliveries?status=paused")).json().deliveries[0];
      const slack = (await client.get(`/webhook/inbox/deliveries/${second.deliveryId}`)).json();
      assert.equal(slack.payloadSent, false);
      assert.match(slack.payload.text, /^\*Second\*/);

      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
      const erased = await call(svc, "DELETE", "/token", { token });
      assert.equal(erased.status, 200, erased.text);
      const after = await client.get(`/webhook/inbox/deliveries/${second.deliveryId}`);
      assert.equal(after.status, 401, "an erased wallet shows nothing");
      assert.doesNotMatch(after.text, /Second/);
    } finally {
      await endpoint.close();
      await svc.dispose();
    }
  },
});
