// The SMTP dialogue itself: greeting, advertised extensions, refused commands, the size and
// recipient limits, and STARTTLS when a certificate is configured.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail, smtpDialog } from "./helpers/smtp.ts";
import { parseConfig } from "../src/config.ts";

Deno.test("the SMTP dialogue: greeting, extensions, limits", async () => {
  const svc = await startService({ smtp: true, env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  try {
    const client = walletClient(svc, await newToken(svc));
    // 51 mailboxes (51 credits): one more than a message may name.
    const addresses: string[] = [];
    for (let i = 0; i < 51; i++) {
      const created = await client.postJson("/webhook", { url: "http://127.0.0.1:9/x", webhookId: `m${i}` });
      addresses.push(created.json().email);
    }
    const replies = await smtpDialog(svc, [
      "EHLO client.example",
      "AUTH PLAIN AGFubgBzZWNyZXQ=",
      "STARTTLS",
      "MAIL FROM:<ann@sender.example> SIZE=20000000",
      "MAIL FROM:<ann@sender.example>",
      "RCPT TO:<nobody@mail.localhost>",
      "RCPT TO:<someone@elsewhere.example>",
      ...addresses.map((address) => `RCPT TO:<${address.toUpperCase()}>`),
      "RSET",
      "QUIT",
    ]);
    const [greeting, ehlo, auth, starttls, tooBig, mailFrom, unknown, foreign, ...rest] = replies;
    assert.match(greeting, /^220 mail\.localhost /);
    assert.equal(greeting, "220 mail.localhost ESMTP", "the name and ESMTP said once");
    assert.match(ehlo, /^250-mail\.localhost/);
    assert.match(ehlo, /\r\n250[- ]SIZE 10485760(\r\n|$)/);
    assert.doesNotMatch(ehlo, /AUTH|STARTTLS/);
    assert.match(auth, /^5\d\d /);
    assert.match(starttls, /^5\d\d /);
    assert.match(tooBig, /^552 /);
    assert.match(mailFrom, /^250 /);
    assert.equal(unknown, "550 5.1.1 Mailbox does not exist");
    assert.equal(foreign, "550 5.1.1 Not a mailbox of mail.localhost");
    const rcpts = rest.slice(0, 51);
    assert.ok(rcpts.slice(0, 50).every((reply) => reply.startsWith("250 ")), rcpts.join("\n"));
    assert.match(rcpts[50], /^452 .*too many recipients/);
    assert.match(rest.at(-1)!, /^221 /);
  } finally {
    await svc.dispose();
  }
});

async function hasOpenssl(): Promise<boolean> {
  try {
    return (await new Deno.Command("openssl", { args: ["version"], stdout: "null", stderr: "null" }).output())
      .success;
  } catch {
    return false;
  }
}

Deno.test({
  name: "STARTTLS is offered with SMTP_TLS_CERT and SMTP_TLS_KEY, and mail arrives over it",
  ignore: !await hasOpenssl(),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "smtp-tls-" });
    const cert = `${dir}/cert.pem`;
    const key = `${dir}/key.pem`;
    const made = await new Deno.Command("openssl", {
      args: ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"]
        .concat(["-subj", "/CN=mail.localhost"]),
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.ok(made.success, new TextDecoder().decode(made.stderr));
    const svc = await startService({
      smtp: true,
      env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", SMTP_TLS_CERT: cert, SMTP_TLS_KEY: key },
    });
    const receiver = startReceiver();
    try {
      const [, ehlo] = await smtpDialog(svc, ["EHLO client.example", "QUIT"]);
      assert.match(ehlo, /\r\n250[- ]STARTTLS(\r\n|$)/);
      assert.doesNotMatch(ehlo, /AUTH/);
      const client = walletClient(svc, await newToken(svc));
      const address =
        (await client.postJson("/webhook", { url: `${receiver.url}/tls`, webhookId: "tls" })).json()
          .email;
      const sent = await sendMail(
        svc,
        { to: address, subject: "Over TLS", text: "Encrypted on the way in." },
        { ignoreTLS: false, requireTLS: true, tls: { rejectUnauthorized: false } },
      );
      assert.equal(sent.code, 250, sent.response);
      const [delivery] = await receiver.waitFor(1);
      assert.equal(JSON.parse(delivery.body).subject, "Over TLS");
    } finally {
      await receiver.close();
      await svc.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("SMTP_TLS_CERT and SMTP_TLS_KEY are set together or not at all", () => {
  const half = parseConfig({ SMTP_TLS_CERT: "/etc/cert.pem" });
  assert.ok("error" in half);
  assert.match(half.error, /^Invalid SMTP_TLS_CERT: must be set together with SMTP_TLS_KEY/);
  const both = parseConfig({ SMTP_TLS_CERT: "/etc/cert.pem", SMTP_TLS_KEY: "/etc/key.pem" });
  assert.ok(!("error" in both));
  assert.deepEqual(both.smtpTls, { certPath: "/etc/cert.pem", keyPath: "/etc/key.pem" });
  const none = parseConfig({});
  assert.ok(!("error" in none));
  assert.equal(none.smtpTls, undefined);
});
