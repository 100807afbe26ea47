// An alert email address gets no alert before its owner confirms it from the link mailed to it
// (issue 23), through the real HTTP API and a local SMTP relay: the page, the one-time POST, a
// changed address, and the webhook alerts that go out meanwhile.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { auditOf, startService } from "./helpers/service.ts";
import { confirmationLinkTo, decodedText, startRelay } from "./helpers/relay.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { sha256Hex } from "../src/ids.ts";
import { eventually } from "./helpers/wait.ts";

const NOT_FOUND = "Confirmation link not found or expired";

Deno.test({
  name: "alert email confirmation",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const receiver = startReceiver(() => new Response("ok"));
    const relay = await startRelay();
    const svc = await startService({
      env: {
        UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
        PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET,
        SMTP_RELAY_URL: relay.url,
        DELIVERY_RETRY_SCALE: "0.01",
      },
    });
    try {
      const token = await newToken(svc);
      const client = walletClient(svc, token);
      const hash = await sha256Hex(token);
      const put = (value: unknown) =>
        call(svc, "PUT", "/token/settings", { token, body: JSON.stringify(value) });
      const settings = async () => (await client.get("/token/settings")).json();
      const lowBalanceMails = () => relay.mails.filter((mail) => /Subject: Low balance/.test(mail.raw));
      /** Debits until the next low-balance alert reaches the webhook receiver. */
      const crossThreshold = async (alerts: number) => {
        const { low_balance_threshold } = await settings();
        let balance = (await client.get("/kv/b/k")).balance!;
        while (balance >= low_balance_threshold) balance = (await client.get("/kv/b/k")).balance!;
        await receiver.waitFor(alerts);
        return balance;
      };

      let link = "";
      await t.step("a new address is unconfirmed and gets a mail with a link", async () => {
        const balance = (await client.get("/token")).json().wallet;
        const res = await put({
          low_balance_threshold: balance - 12,
          low_balance_webhook: { url: `${receiver.url}/alerts` },
          low_balance_email: "owner@example.com",
        });
        assert.deepEqual([res.status, res.text], [200, "OK"]);
        const view = await settings();
        assert.equal(view.low_balance_email, "owner@example.com");
        assert.equal(view.low_balance_email_confirmed, false);
        link = await confirmationLinkTo(relay, "owner@example.com");
        assert.match(link, new RegExp(`^/alerts/confirm\\?wallet=${hash}&token=[A-Za-z0-9_-]{43}$`));
        const mail = relay.mails[0];
        assert.match(mail.raw, /Subject: Confirm owner@example.com for /);
        assert.ok(!decodedText(mail).includes(token), "the token is never mailed");
        // The delivery's log line is written after the relay accepts the mail; an empty page is free.
        const logs = await eventually("the confirmation mail's log line", async () => {
          const page = (await client.get("/token/logs?type=webhook-delivery&n=10")).json().logs;
          return page.length > 0 ? page : undefined;
        });
        assert.deepEqual(logs.map((l: any) => [l.path, l.status_code, l.cost]), [
          ["@alert-email-confirmation", 250, 0],
        ]);
      });

      await t.step("the link's page only shows a button; bad or altered links change nothing", async () => {
        const page = await call(svc, "GET", link);
        assert.equal(page.status, 200);
        assert.match(page.headers.get("content-type")!, /^text\/html/);
        assert.equal(page.headers.get("referrer-policy"), "no-referrer");
        assert.ok(page.text.includes(`<form method="post" action="${link}">`), page.text);
        const tokenAt = link.indexOf("token=") + "token=".length;
        const flipped = link[tokenAt] === "A" ? "B" : "A";
        const altered = link.slice(0, tokenAt) + flipped + link.slice(tokenAt + 1);
        const wrong = await call(svc, "POST", altered);
        assert.deepEqual([wrong.status, wrong.text], [404, NOT_FOUND]);
        const otherWallet = await call(svc, "POST", link.replace(hash, "0".repeat(64)));
        assert.deepEqual([otherWallet.status, otherWallet.text], [404, NOT_FOUND]);
        const malformed = await call(svc, "POST", `${link}x`);
        assert.equal(malformed.status, 400);
        assert.match(malformed.text, /^Invalid token: must be 43 base64url characters$/);
        const noWallet = await call(svc, "POST", link.replace(`wallet=${hash}&`, ""));
        assert.equal(noWallet.status, 400);
        assert.match(noWallet.text, /^Invalid wallet: /);
        // The settings answer may be sent back as is; saying "confirmed" does not confirm.
        const view = await settings();
        const sentBack = await put({ ...view, low_balance_webhook: { url: `${receiver.url}/alerts` } });
        assert.deepEqual([sentBack.status, sentBack.text], [200, "OK"]);
        const forged = await put({
          ...view,
          low_balance_webhook: undefined,
          low_balance_email_confirmed: true,
        });
        assert.deepEqual([forged.status, forged.text], [200, "OK"]);
        assert.equal((await settings()).low_balance_email_confirmed, false);
        const restored = await put({ ...view, low_balance_webhook: { url: `${receiver.url}/alerts` } });
        assert.equal(restored.status, 200);
      });

      await t.step("an alert while the address is unconfirmed goes to the webhook only", async () => {
        await crossThreshold(1);
      });

      await t.step("POST confirms; the link does nothing more", async () => {
        const confirmed = await call(svc, "POST", link);
        assert.deepEqual([confirmed.status, confirmed.text], [
          200,
          "Confirmed: alerts go to owner@example.com",
        ]);
        assert.equal(confirmed.headers.get("cache-control"), "no-store");
        const again = await call(svc, "POST", link);
        assert.deepEqual([again.status, again.text], [200, "Already confirmed"]);
        assert.equal((await settings()).low_balance_email_confirmed, true);
      });

      await t.step("the confirmed address gets the next episode's alert, and only that one", async () => {
        await buyCredits(svc, token);
        const balance = (await client.get("/token")).json().wallet;
        const current = await settings();
        const res = await put({
          low_balance_threshold: balance - 4,
          low_balance_webhook: { url: `${receiver.url}/alerts` },
          low_balance_email: current.low_balance_email,
        });
        assert.equal(res.status, 200);
        assert.equal(
          (await settings()).low_balance_email_confirmed,
          true,
          "an unchanged address stays confirmed",
        );
        const last = await crossThreshold(2);
        const [mail] = await eventually("the alert email", () => {
          const mails = lowBalanceMails();
          return mails.length > 0 ? mails : undefined;
        });
        assert.deepEqual(mail.to, ["owner@example.com"]);
        assert.match(
          mail.raw,
          new RegExp(`Subject: Low balance: ${last} credits left`),
          "the second episode's",
        );
        assert.equal(relay.mails.filter((m) => m.to.includes("owner@example.com")).length, 2);
      });

      await t.step(
        "a changed address is unconfirmed, gets its own link, and the old link is void",
        async () => {
          const current = await settings();
          const res = await put({
            low_balance_threshold: current.low_balance_threshold,
            low_balance_email: "new@example.com",
          });
          assert.equal(res.status, 200);
          assert.equal((await settings()).low_balance_email_confirmed, false);
          const fresh = await confirmationLinkTo(relay, "new@example.com");
          assert.notEqual(fresh, link);
          const old = await call(svc, "POST", link);
          assert.deepEqual([old.status, old.text], [404, NOT_FOUND]);
          const confirmed = await call(svc, "POST", fresh);
          assert.deepEqual([confirmed.status, confirmed.text], [
            200,
            "Confirmed: alerts go to new@example.com",
          ]);
          assert.equal((await settings()).low_balance_email_confirmed, true);
        },
      );

      await t.step("saving the unconfirmed address again at once sends no second link", async () => {
        const current = await settings();
        await put({
          low_balance_threshold: current.low_balance_threshold,
          low_balance_email: "third@example.com",
        });
        await confirmationLinkTo(relay, "third@example.com");
        await put({
          low_balance_threshold: current.low_balance_threshold + 1,
          low_balance_email: "third@example.com",
        });
        // A later address's link is the sync point: the one before it was decided before it.
        await put({
          low_balance_threshold: current.low_balance_threshold,
          low_balance_email: "fourth@example.com",
        });
        await confirmationLinkTo(relay, "fourth@example.com");
        assert.equal(relay.mails.filter((m) => m.to.includes("third@example.com")).length, 1);
      });

      await t.step("the audit is clean", async () => {
        const audit = await auditOf(svc);
        assert.equal(audit.code, 0, audit.stdout);
      });
    } finally {
      await svc.dispose();
      await relay.close();
      await receiver.close();
    }
  },
});
