// The pure decisions behind the mail receiver's shares (issue 21): how HTML is measured before any
// parser runs, how parse slots are shared between senders, and when a sender is slowed.
import assert from "node:assert/strict";
import { measureHtml } from "../src/email/html_measure.ts";
import { HTML_BOUNDS } from "../src/email/parsed_email.ts";
import { FairSlots } from "../src/email/fair_slots.ts";
import { RefusalPacing } from "../src/email/refusal_pacing.ts";
import { decodeQuotedPrintable, htmlRefusalBeforeParsing } from "../src/email/html_prescan.ts";

const BOUNDS = { maxNesting: 10, maxElements: 50, maxMarkupChars: 200 };
const depth = (html: string) => measureHtml(html, BOUNDS).deepest;

Deno.test("nesting is counted as htmlparser2 nests: implied closes, void and raw-text elements", () => {
  assert.equal(depth("<div><div><span>x</span></div></div>"), 3);
  // <p>, <li>, <td> and <tr> close their open siblings; void elements never open.
  assert.equal(depth("<p>a<p>b<p>c"), 1);
  assert.equal(depth("<ul><li>a<li>b<li>c</ul>"), 2);
  assert.equal(depth("<table><tr><td>a<td>b<tr><td>c</table>"), 3);
  assert.equal(depth("<br><hr><img src=x><input>"), 0);
  // "/>" closes nothing in HTML, except inside svg and math.
  assert.equal(depth("<div/><div/><div/>"), 3);
  assert.equal(depth("<svg><g/><g/><g/></svg>"), 1);
  // End tags close up to their element; unknown ones are ignored.
  assert.equal(depth("<div><b><i>x</div><div>y</div></nothing>"), 3);
  // Tags inside script, style, comments and quoted attributes are not elements.
  assert.equal(depth("<script>if (a<b) { '<div><div>' }</script><style>a>b{}</style>"), 1);
  assert.equal(depth("<!-- <div><div> --><a title='<div><div>' href=\"<b>\">x</a>"), 1);
  assert.equal(depth("<script>'</scriptx><div>'</script>"), 1);
});

Deno.test("each bound refuses with its own phrase; within them nothing is refused", () => {
  assert.equal(measureHtml("<b>".repeat(10), BOUNDS).refusal, undefined);
  assert.equal(
    measureHtml("<b>".repeat(11), BOUNDS).refusal,
    "HTML nested too deeply: more than 10 open elements",
  );
  assert.equal(measureHtml("<i></i>".repeat(51), BOUNDS).refusal, "Too many HTML elements: more than 50");
  // A rule is 42 characters of text from 4 of markup; quotes and lists prefix each line.
  assert.equal(
    measureHtml("<hr>".repeat(5), BOUNDS).refusal,
    "HTML expands too much: its markup alone makes more than 200 characters of text",
  );
  assert.equal(measureHtml("<hr>".repeat(4), BOUNDS).refusal, undefined);
  const quoted = measureHtml("<blockquote><blockquote><blockquote>" + "<br>".repeat(20), HTML_BOUNDS);
  assert.equal(quoted.markupChars, 3 * 2 + (0 + 3 + 6) + 20 * (1 + 9));
});

Deno.test("a document measured in chunks measures as a whole, whatever the cuts", () => {
  const html = "<div class='a>b'><!-- x -->" + "<p>text<br/>".repeat(5) + "<script>1<2</script></div>";
  const whole = measureHtml(html, HTML_BOUNDS);
  const bytes = new TextEncoder().encode(html);
  for (const size of [1, 2, 3, 7]) {
    const measure = measureHtml("", HTML_BOUNDS);
    for (let i = 0; i < bytes.length; i += size) measure.write(bytes.subarray(i, i + size));
    assert.deepEqual(
      [measure.deepest, measure.elements, measure.markupChars],
      [whole.deepest, whole.elements, whole.markupChars],
      `chunks of ${size}`,
    );
  }
});

Deno.test("the pre-scan measures inline HTML parts only, decoded, in charsets where '<' is '<'", () => {
  const deep = "<div>".repeat(1001);
  const message = (headers: string, body: string) =>
    new TextEncoder().encode(`Subject: s\r\n${headers}\r\n\r\n${body}\r\n`);
  assert.match(htmlRefusalBeforeParsing(message("Content-Type: text/html", deep)) ?? "", /nested too deeply/);
  assert.equal(htmlRefusalBeforeParsing(message("Content-Type: text/plain", deep)), undefined);
  assert.equal(
    htmlRefusalBeforeParsing(message("Content-Type: text/html\r\nContent-Disposition: attachment", deep)),
    undefined,
  );
  assert.equal(
    htmlRefusalBeforeParsing(message("Content-Type: text/html; charset=iso-2022-jp", deep)),
    undefined,
    "left to the worker, which measures the decoded text",
  );
  const multipart = "Content-Type: multipart/mixed; boundary=x";
  const parts = `--x\r\nContent-Type: text/plain\r\n\r\n${deep}\r\n--x\r\nContent-Type: text/html\r\n` +
    `Content-Transfer-Encoding: base64\r\n\r\n${btoa(deep).replace(/.{76}/g, "$&\r\n")}\r\n--x--`;
  assert.match(htmlRefusalBeforeParsing(message(multipart, parts)) ?? "", /nested too deeply/);
  // Open elements carry from one HTML part to the next, as mailparser joins them.
  const half = "<b>".repeat(600);
  const split =
    `--x\r\nContent-Type: text/html\r\n\r\n${half}\r\n--x\r\nContent-Type: text/html\r\n\r\n${half}\r\n--x--`;
  assert.match(htmlRefusalBeforeParsing(message(multipart, split)) ?? "", /nested too deeply/);
});

Deno.test("quoted-printable: escapes and soft line breaks decoded, within the bound", () => {
  const decode = (text: string, max = 100) =>
    new TextDecoder().decode(decodeQuotedPrintable(new TextEncoder().encode(text), max));
  assert.equal(decode("=3Cb=3E soft=\r\nbreak=\nx =zz"), "<b> softbreakx =zz");
  assert.equal(decode("=3C=3C=3C", 2), "<<");
});

Deno.test("parse slots: a sender holds at most its share, and a freed slot goes to the next sender in turn", async () => {
  const slots = new FairSlots({ slots: 3, perSender: 2, maxWaiting: 4, maxWaitingPerSender: 2 });
  const order: string[] = [];
  const take = async (sender: string) => {
    const slot = await slots.acquire(sender);
    assert.ok(slot.ok, `${sender} turned away`);
    order.push(sender);
    return slot.release;
  };
  const a1 = await take("A");
  const a2 = await take("A");
  const a3 = take("A");
  const a4 = take("A");
  // A's share is full, its next ones wait; B gets the third slot at once.
  const b1 = await take("B");
  assert.deepEqual(order, ["A", "A", "B"]);
  assert.deepEqual(await slots.acquire("A"), { ok: false, waiting: 2 }, "A's own queue is full");
  const b2 = take("B");
  const c1 = take("C");
  assert.equal(slots.waiting, 4);
  assert.deepEqual(await slots.acquire("D"), { ok: false, waiting: 4 }, "every queue together is full");

  // A frees one: the turn goes round A, B, C.
  a1();
  const next = await a3;
  b1();
  const then = await b2;
  next();
  await c1;
  assert.deepEqual(order, ["A", "A", "B", "A", "B", "C"]);
  a2();
  await a4;
  assert.equal(slots.active, 3);
  assert.equal(slots.waiting, 0);
  then();
});

Deno.test("refusal pacing: ten quick refusals, then slowed until the bucket drains; a slow parse counts more", () => {
  const pacing = new RefusalPacing({ burst: 10, drainPerSecond: 1, maxSenders: 2 });
  for (let i = 0; i < 9; i++) pacing.refused("A", 0, 0);
  assert.equal(pacing.slowed("A", 0), false);
  pacing.refused("A", 0, 0);
  assert.equal(pacing.slowed("A", 0), true);
  pacing.refused("A", 0, 0);
  // 11 in the bucket, draining 1 a second.
  assert.equal(pacing.slowed("A", 999), true);
  assert.equal(pacing.slowed("A", 1001), false);
  // A refusal that took a 10 s parse fills the bucket alone.
  pacing.refused("B", 9_000, 0);
  assert.equal(pacing.slowed("B", 0), true);
  assert.equal(pacing.slowed("C", 0), false);
  // At most maxSenders are remembered: the least recently refused is forgotten.
  pacing.refused("C", 9_000, 10);
  assert.equal(pacing.slowed("C", 10), true);
  assert.equal(pacing.slowed("A", 10), false);
});
