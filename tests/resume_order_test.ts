// Resuming a paused webhook sends what waited strictly oldest first (issue 27), the email whose
// attempt was in flight at the pause included: paused while a slow receiver holds that attempt,
// more mail, resumed before the slow answer (a 503) comes. The receiver then gets the in-flight
// email's retry first and the others one at a time, in the order they were received.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { eventually } from "./helpers/wait.ts";

const SLOW_MS = 4000;

Deno.test({
  name: "resume: held deliveries go strictly oldest first, the one in flight at the pause first",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    let slowAnswered = false;
    const endpoint = startReceiver();
    const slow = endpoint.slowly(SLOW_MS, () => {
      slowAnswered = true;
      return new Response("busy", { status: 503 });
    });
    endpoint.reply((request, index) => index === 0 ? slow(request, index) : new Response("ok"));
    // Retries 0.1 ms after a failure: a retry that lost its place would come after the others.
    const svc = await startService({
      smtp: true,
      env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", DELIVERY_RETRY_SCALE: "0.00002" },
    });
    try {
      const client = walletClient(svc, await newToken(svc));
      const hook = (await client.postJson("/webhook", { url: `${endpoint.url}/in`, webhookId: "inbox" }))
        .json();
      const mail = async (subject: string) => {
        const sent = await sendMail(svc, { to: hook.email, subject, text: subject });
        assert.equal(sent.code, 250, sent.response);
      };
      await mail("First");
      await endpoint.waitFor(1);
      const paused = await client.patch("/webhook/inbox", JSON.stringify({ active: false }));
      assert.equal(paused.status, 200, paused.text);
      for (const subject of ["Second", "Third", "Fourth", "Fifth"]) await mail(subject);
      const resumed = await client.patch("/webhook/inbox", JSON.stringify({ active: true }));
      assert.equal(resumed.status, 200, resumed.text);
      assert.equal(slowAnswered, false, `the first attempt is still in flight at the resume (${SLOW_MS} ms)`);

      const received = await endpoint.waitFor(6, SLOW_MS + 15_000).catch(async (error) => {
        const list = (await client.get("/webhook/inbox/deliveries")).text;
        throw new Error(`${error.message}\n${list}\n${svc.output().slice(-3000)}`);
      });
      const subjects = received.map((r) => JSON.parse(r.body).subject);
      assert.deepEqual(subjects, ["First", "First", "Second", "Third", "Fourth", "Fifth"]);
      const ids = received.map((r) => r.headers["webhook-id"]);
      assert.equal(ids[0], ids[1], "the retry is the same delivery");
      await eventually("all delivered", async () => {
        const list = (await client.get("/webhook/inbox/deliveries")).json().deliveries;
        return list.length === 5 && list.every((d: any) => d.status === "delivered") || undefined;
      });
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    } finally {
      await endpoint.close();
      await svc.dispose();
    }
  },
});
