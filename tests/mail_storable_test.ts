// Mail is outside input too (issue 21): a NUL or an unpaired surrogate in a subject, a body, a sender
// or copy name, an attachment name or a header would make Postgres refuse the EmailReceived event or
// the outbox payload, and with them the whole ledger batch. The mail is accepted with each NUL
// removed and each unpaired surrogate made U+FFFD (UTF-16 and UTF-7 encoded words decode to them).
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendRaw } from "./helpers/smtp.ts";
import { parseEmail } from "../src/email/parse.ts";
import { isStorable } from "../src/storable_text.ts";

const b64 = (bytes: number[] | string) => Buffer.from(bytes as any).toString("base64");
/** "A", a lone high surrogate, "B" in UTF-16BE: an encoded word that decodes to "A\ud800B". */
const LONE = `=?utf-16be?B?${b64([0x00, 0x41, 0xd8, 0x00, 0x00, 0x42])}?=`;
/** UTF-7 for a lone high surrogate. */
const LONE_UTF7 = "=?utf-7?Q?+2AA-?=";
const NUL = `=?utf-8?B?${b64("nul\u0000byte")}?=`;

function hostileMail(to: string): Uint8Array {
  return new TextEncoder().encode([
    `From: ${LONE} <ann@sender.example>`,
    `To: ${to}`,
    `Cc: ${LONE_UTF7} <cc@sender.example>`,
    `Subject: ${LONE} ${NUL} ${LONE_UTF7}`,
    `Message-ID: <storable@sender.example>`,
    `X-Note: ${LONE}`,
    `MIME-Version: 1.0`,
    `Content-Type: multipart/mixed; boundary="b"`,
    ``,
    `--b`,
    `Content-Type: text/plain; charset=utf-8`,
    `Content-Transfer-Encoding: base64`,
    ``,
    b64("before\u0000after\n"),
    `--b`,
    `Content-Type: text/html; charset=utf-8`,
    `Content-Transfer-Encoding: base64`,
    ``,
    b64("<p>html\u0000body</p>"),
    `--b`,
    `Content-Type: application/octet-stream`,
    `Content-Disposition: attachment; filename="${LONE}.bin"`,
    `Content-Transfer-Encoding: base64`,
    ``,
    b64([1, 2, 3]),
    `--b--`,
    ``,
  ].join("\r\n"));
}

Deno.test("NUL and unpaired surrogates in a mail: accepted, delivered with them replaced, the log intact", async () => {
  const svc = await startService({ smtp: true, env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  const receiver = startReceiver();
  try {
    const client = walletClient(svc, await newToken(svc));
    const box =
      (await client.postJson("/webhook", { url: `${receiver.url}/in`, webhookId: "in" })).json().email;
    const sent = await sendRaw(svc, hostileMail(box), [box]);
    assert.equal(sent.code, 250, sent.response);

    const [delivery] = await receiver.waitFor(1);
    const payload = JSON.parse(delivery.body);
    assert.equal(payload.subject, "A\uFFFDBnulbyte\uFFFD");
    assert.equal(payload.from.name, "A\uFFFDB");
    assert.deepEqual(payload.cc, [{ email: "cc@sender.example", name: "\uFFFD" }]);
    assert.match(payload.text, /^beforeafter\n\s*$/);
    assert.match(payload.html, /<p>htmlbody<\/p>$/);
    assert.equal(payload.attachments[0].filename, "A\uFFFDB.bin");
    const download = await fetch(payload.attachments[0].downloadUrl);
    assert.deepEqual(new Uint8Array(await download.arrayBuffer()), new Uint8Array([1, 2, 3]));

    // The owner's wallet and its log go on as before: another mail, the call log, the audit.
    const next = await sendRaw(
      svc,
      new TextEncoder().encode(`From: b@x.example\r\nTo: ${box}\r\nSubject: after\r\n\r\nok\r\n`),
      [box],
    );
    assert.equal(next.code, 250, next.response);
    const logs = (await client.get("/token/logs?type=email&n=5")).json().logs;
    assert.deepEqual(logs.map((l: any) => [l.status_code, l.cost]), [[250, 2], [250, 5]]);
    const audit = await auditOf(svc);
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});

Deno.test("every string the parser hands on is storable, headers included", async () => {
  const email = await parseEmail(hostileMail("r_x@mail.localhost"));
  const strings = [
    email.messageId,
    email.from.email,
    email.from.name,
    email.subject,
    email.text,
    email.html,
    ...email.to.flatMap((a) => [a.email, a.name]),
    ...email.cc.flatMap((a) => [a.email, a.name]),
    ...email.headers.flat(),
    ...email.attachments.flatMap((a) => [a.filename, a.contentType]),
  ];
  assert.deepEqual(strings.filter((text) => !isStorable(text)), []);
  assert.equal(email.subject, "A\uFFFDBnulbyte\uFFFD");
});
