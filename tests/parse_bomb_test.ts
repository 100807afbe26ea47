// Parse bombs (issue 21): a message whose HTML would keep a parser busy for seconds is refused with a
// 5xx in milliseconds, before any parse worker, while another wallet's mail is accepted; legitimate
// large mail still passes; a sender whose messages keep being refused is slowed with a 4xx. Over
// real SMTP from several loopback addresses, then the parse-level bounds without a service.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { parseEmailSafely } from "../src/email/parse.ts";

const CRLF = "\r\n";
const ascii = (text: string) => new TextEncoder().encode(text);
const base64Lines = (bytes: Uint8Array | string) =>
  Buffer.from(bytes).toString("base64").replace(/.{76}/g, `$&${CRLF}`);

/** The measured attack: 200,000 nested <div>, 2.2 MB of HTML. */
function nestedDivs(depth: number): string {
  return "<div>".repeat(depth) + "deep" + "</div>".repeat(depth);
}

function htmlMessage(to: string, subject: string, html: string): Uint8Array {
  return ascii(
    `From: bomber@attacker.example${CRLF}To: ${to}${CRLF}Subject: ${subject}${CRLF}MIME-Version: 1.0${CRLF}` +
      `Content-Type: text/html; charset=utf-8${CRLF}${CRLF}${html}${CRLF}`,
  );
}

/** The same bomb base64-encoded inside multipart/alternative, beside a harmless text part. */
function encodedBomb(to: string): Uint8Array {
  return ascii(
    `From: bomber@attacker.example${CRLF}To: ${to}${CRLF}Subject: encoded${CRLF}MIME-Version: 1.0${CRLF}` +
      `Content-Type: multipart/alternative; boundary="b1"${CRLF}${CRLF}--b1${CRLF}` +
      `Content-Type: text/plain${CRLF}${CRLF}Nothing to see.${CRLF}--b1${CRLF}` +
      `Content-Type: text/html; charset=utf-8${CRLF}Content-Transfer-Encoding: base64${CRLF}${CRLF}` +
      `${base64Lines(nestedDivs(200_000))}${CRLF}--b1--${CRLF}`,
  );
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

Deno.test("a parse bomb is refused in milliseconds while another wallet's mail is accepted", async () => {
  const svc = await startService({ smtp: true, env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  const receiver = startReceiver();
  try {
    const victim = walletClient(svc, await newToken(svc));
    const victimBox = (await victim.postJson("/webhook", { url: `${receiver.url}/v`, webhookId: "v" })).json()
      .email;
    const target = walletClient(svc, await newToken(svc));
    const targetBox = (await target.postJson("/webhook", { url: `${receiver.url}/t`, webhookId: "t" })).json()
      .email;
    const bomb = htmlMessage(targetBox, "bomb", nestedDivs(200_000));
    assert.ok(bomb.length > 2_000_000);

    const [plain, encoded, mail] = await Promise.all([
      timed(
        sendMail({ smtpPort: svc.smtpPort }, {
          envelope: { from: "b@x.example", to: [targetBox] },
          raw: bomb,
        }, {
          localAddress: "127.0.0.2",
        }),
      ),
      timed(sendMail({ smtpPort: svc.smtpPort }, {
        envelope: { from: "b@x.example", to: [targetBox] },
        raw: encodedBomb(targetBox),
      }, { localAddress: "127.0.0.2" })),
      timed(sendMail(svc, { to: victimBox, subject: "Meanwhile", text: "Ordinary mail." }, {
        localAddress: "127.0.0.3",
      })),
    ]);
    for (const refused of [plain, encoded]) {
      assert.equal(refused.value.code, 554, refused.value.response);
      assert.match(refused.value.response, /^554 5\.6\.0 Message refused: HTML nested too deeply/);
      // Sending 2 to 3 MB over loopback included; a worker held until its deadline took 10 s.
      assert.ok(refused.ms < 1000, `refused after ${refused.ms.toFixed(0)} ms`);
    }
    assert.equal(mail.value.code, 250, mail.value.response);
    const [delivery] = await receiver.waitFor(1);
    assert.equal(JSON.parse(delivery.body).subject, "Meanwhile");
    // The target's owner sees why the mail never came, and pays nothing for it.
    const logs = (await target.get("/token/logs?type=email&n=10")).json().logs;
    assert.equal(logs.length, 2);
    for (const entry of logs) {
      assert.deepEqual([entry.status_code, entry.cost], [554, 0]);
      assert.match(entry.error, /^Message refused: HTML nested too deeply/);
    }
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});

Deno.test("large legitimate mail passes: a 5 MB PDF and a long HTML newsletter", async () => {
  const svc = await startService({
    smtp: true,
    env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET },
  });
  const receiver = startReceiver();
  try {
    const client = walletClient(svc, await newToken(svc));
    await buyCredits(svc, client.token);
    const box =
      (await client.postJson("/webhook", { url: `${receiver.url}/in`, webhookId: "in" })).json().email;
    const pdf = new Uint8Array(5 * 1024 * 1024);
    crypto.getRandomValues(pdf.subarray(0, 65536));
    pdf.set(ascii("%PDF-1.7\n"));
    const story = (i: number) =>
      `<tr><td class="story" style="padding:12px"><h2><a href="https://news.example/s/${i}">Story ${i}</a></h2>` +
      `<p>Lorem ipsum dolor sit amet, <b>consectetur</b> adipiscing elit &amp; more.</p>` +
      `<img src="https://news.example/i/${i}.png" alt="Picture ${i}"><br><ul><li>One</li><li>Two</li></ul></td></tr>`;
    const newsletter = `<html><body><table><tbody>${
      Array.from({ length: 2000 }, (_, i) => story(i)).join("\n")
    }</tbody></table></body></html>`;
    assert.ok(newsletter.length > 500_000);

    const withPdf = await sendMail(svc, {
      to: box,
      subject: "Report",
      text: "The report is attached.",
      attachments: [{ filename: "report.pdf", content: pdf, contentType: "application/pdf" }],
    });
    assert.equal(withPdf.code, 250, withPdf.response);
    const htmlOnly = await sendMail(svc, { to: box, subject: "Newsletter", html: newsletter });
    assert.equal(htmlOnly.code, 250, htmlOnly.response);

    const delivered = (await receiver.waitFor(2, 30_000)).map((r) => JSON.parse(r.body));
    const report = delivered.find((p) => p.subject === "Report");
    assert.equal(report.attachments[0].size, pdf.length);
    const download = await fetch(report.attachments[0].downloadUrl);
    assert.equal((await download.arrayBuffer()).byteLength, pdf.length);
    const news = delivered.find((p) => p.subject === "Newsletter");
    assert.match(news.text, /Story 1999/);
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});

Deno.test("a sender whose messages keep being refused is slowed with 451; other senders are not", async () => {
  const svc = await startService({ smtp: true, env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  const receiver = startReceiver();
  try {
    const client = walletClient(svc, await newToken(svc));
    const box =
      (await client.postJson("/webhook", { url: `${receiver.url}/in`, webhookId: "in" })).json().email;
    const smallBomb = htmlMessage(box, "small bomb", nestedDivs(5_000));
    const send = () =>
      sendMail({ smtpPort: svc.smtpPort }, { envelope: { from: "b@x.example", to: [box] }, raw: smallBomb }, {
        localAddress: "127.0.0.4",
      });
    let refused = 0;
    let slowed = "";
    for (let i = 0; i < 14 && !slowed; i++) {
      const sent = await send();
      if (sent.code === 554) refused++;
      else if (sent.code === 451) slowed = sent.response;
      else assert.fail(`unexpected ${sent.response}`);
    }
    // About ten quick refusals (the bucket drains a little meanwhile), then the sender waits: its
    // next message is not read, let alone parsed.
    assert.ok(refused >= 10 && refused <= 12, `${refused} refusals before the sender was slowed`);
    assert.match(slowed, /^451 4\.7\.1 Too many refused messages from your address/);
    assert.equal((await send()).code, 451);
    const other = await sendMail(svc, { to: box, subject: "Fine", text: "Hi" }, {
      localAddress: "127.0.0.5",
    });
    assert.equal(other.code, 250, other.response);
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});

Deno.test("bombs are refused before a worker: deep, over-long and over-expanding HTML, each encoding", async () => {
  const refusals: [string, Uint8Array, RegExp][] = [
    ["nested", htmlMessage("r@x", "s", nestedDivs(1001)), /^HTML nested too deeply: more than 1000/],
    ["unclosed inline", htmlMessage("r@x", "s", "<b>x".repeat(2000)), /^HTML nested too deeply/],
    [
      "elements",
      htmlMessage("r@x", "s", "<i></i>".repeat(100_001)),
      /^Too many HTML elements: more than 100000$/,
    ],
    ["rules", htmlMessage("r@x", "s", "<hr>".repeat(60_000)), /^HTML expands too much/],
    [
      "quoted-printable",
      ascii(
        `Subject: qp${CRLF}Content-Type: text/html${CRLF}Content-Transfer-Encoding: quoted-printable` +
          `${CRLF}${CRLF}${"=3Cspan=3E".repeat(1200)}${CRLF}`,
      ),
      /^HTML nested too deeply/,
    ],
  ];
  for (const [name, raw, reason] of refusals) {
    const { value: outcome, ms } = await timed(parseEmailSafely(raw, { timeoutMs: 60_000 }));
    assert.equal(outcome.ok, false, name);
    if (!outcome.ok) assert.match(outcome.reason, reason, name);
    // A worker takes about 100 ms only to start.
    assert.ok(ms < 100, `${name}: ${ms.toFixed(0)} ms`);
  }
});

Deno.test("the worker measures the decoded HTML too: a bomb in UTF-16 is refused, not converted", async () => {
  const html = Buffer.from("<b>x".repeat(5000), "utf16le");
  const raw = ascii(
    `Subject: wide${CRLF}Content-Type: text/html; charset=utf-16le${CRLF}Content-Transfer-Encoding: base64` +
      `${CRLF}${CRLF}${base64Lines(html)}${CRLF}`,
  );
  const outcome = await parseEmailSafely(raw);
  assert.equal(outcome.ok, false);
  if (!outcome.ok) assert.match(outcome.reason, /^HTML nested too deeply: more than 1000 open elements$/);
});

Deno.test("sloppy but harmless HTML passes: unclosed paragraphs, list items and cells, scripts holding tags", async () => {
  const html = "<table>" + "<tr><td>cell<td>cell".repeat(3000) + "</table>" + "<p>para".repeat(3000) +
    "<ul>" + "<li>item".repeat(3000) + "</ul>" + `<script>${"<div>".repeat(3000)}</script>` +
    "<!-- " + "<div>".repeat(3000) + " -->" + '<img alt="<div><div>">'.repeat(600) + "<svg>" +
    "<g/>".repeat(2000) + "</svg>";
  const outcome = await parseEmailSafely(htmlMessage("r@x", "sloppy", html));
  assert.ok(outcome.ok, outcome.ok ? "" : outcome.reason);
});

Deno.test("the deadline still ends a parse the pre-scan lets through", async () => {
  const raw = htmlMessage("r@x", "slow", "<p>paragraph</p>".repeat(50_000));
  const outcome = await parseEmailSafely(raw, { timeoutMs: 1 });
  assert.deepEqual(outcome, { ok: false, reason: "Parse timed out after 1 ms" });
});
