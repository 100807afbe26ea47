// Unit tests for the mailbox webhook formats: each body against its target's documented shape
// and limits (CONTRACT section 7, notes/webhooks.md section 3).

import assert from "node:assert/strict";
import { plainText, renderEmail } from "../src/webhooks/formats/mod.ts";
import type { EmailPayload } from "../src/webhooks/payloads.ts";

function email(overrides: Partial<EmailPayload> = {}): EmailPayload {
  return {
    externalMessageId: "<m1@example.test>",
    receivedAt: "2026-11-21T10:00:00.000Z",
    from: { email: "ann@example.test", name: "Ann Example" },
    to: { hash: "ab".repeat(32) },
    webhookId: "default",
    recipient: "r_abc@in.svc.test",
    cc: [],
    subject: "Héllo report",
    text: "Hello plain",
    html: "<p>Hello <b>html</b></p>",
    attachments: [],
    ...overrides,
  };
}

const attachment = {
  filename: "r.pdf",
  size: 9,
  contentType: "application/pdf",
  downloadUrl: "https://svc.test/attachments/1?sig=x",
  downloadUrlExpiresAt: "2026-11-21T11:00:00.000Z",
};

// With the `u` flag, whole surrogate pairs are single code points; only lone halves match `Cs`.
function hasLoneSurrogate(text: string): boolean {
  return /\p{Cs}/u.test(text);
}

Deno.test("no format: the payload as is, as a plain object", () => {
  const payload = email({ attachments: [attachment] });
  for (const format of [undefined, ""] as const) {
    const body = renderEmail(payload, { format });
    assert.deepEqual(body, { ...payload });
    assert.equal(Object.getPrototypeOf(body), Object.prototype);
  }
});

Deno.test("unknown format is refused", () => {
  assert.throws(() => renderEmail(email(), { format: "fax" as never }), /Unknown format "fax"/);
});

Deno.test("plainText: the text part when there is one, else the HTML stripped", () => {
  assert.equal(plainText(email()), "Hello plain");
  const stripped = plainText(email({
    text: "",
    html: '<h1>Title</h1><p>Hello <b>html</b> &amp; <a href="https://x.test">link</a></p>' +
      '<img src="https://t.test/pixel.gif"><script>alert(1)</script>',
  }));
  assert.equal(stripped, "Title\n\nHello html & link [https://x.test]");
  assert.equal(plainText(email({ text: " \n ", html: "<p>Only html</p>" })), "Only html");
  assert.equal(plainText(email({ text: "", html: "" })), "");
});

Deno.test("HTML-only email: every format carries the stripped text", () => {
  const payload = email({ text: "", html: "<p>Hello <b>html</b></p>" });
  assert.match(renderEmail(payload, { format: "slack" }).text as string, /\n\nHello html$/);
  assert.match(renderEmail(payload, { format: "discord" }).content as string, /\n\nHello html$/);
  const options = { chat_id: "1", routing_key: "k".repeat(32) };
  assert.match(renderEmail(payload, { format: "telegram", options }).text as string, /\n\nHello html$/);
  const event = renderEmail(payload, { format: "pagerduty", options }) as any;
  assert.equal(event.payload.custom_details.text, "Hello html");
  const card = (renderEmail(payload, { format: "teams" }) as any).attachments[0].content;
  assert.equal(card.body[2].text, "Hello html");
});

Deno.test("slack: text with the subject in bold and the sender", () => {
  const body = renderEmail(email(), { format: "slack" });
  assert.deepEqual(body, {
    text: "*Héllo report*\nFrom: Ann Example &lt;ann@example.test&gt;\n\nHello plain",
  });
});

Deno.test("slack: email content cannot ping the channel nor make links", () => {
  const body = renderEmail(
    email({
      subject: "<!channel> now",
      from: { email: "a&b@example.test", name: "<@U123>" },
      text: "hi <!here> & <https://evil.test|click>",
    }),
    { format: "slack" },
  );
  const text = body.text as string;
  assert.equal(
    text,
    "*&lt;!channel&gt; now*\nFrom: &lt;@U123&gt; &lt;a&amp;b@example.test&gt;\n\n" +
      "hi &lt;!here&gt; &amp; &lt;https://evil.test|click&gt;",
  );
  assert.ok(!/<|>/.test(text));
});

Deno.test("slack: a huge text is cut under Slack's 40,000 characters, never inside an entity", () => {
  const text = renderEmail(email({ text: "&".repeat(50_000) }), { format: "slack" }).text as string;
  assert.ok(text.length <= 39_000);
  assert.ok(text.endsWith("&amp;…"));
  const long = renderEmail(email({ text: "x".repeat(100_000) }), { format: "slack" }).text as string;
  assert.equal(long.length, 39_000);
});

Deno.test("slack: subject and sender fall back when empty", () => {
  const body = renderEmail(email({ subject: "", from: { email: "ann@example.test", name: "" } }), {
    format: "slack",
  });
  assert.equal(body.text, "*(no subject)*\nFrom: ann@example.test\n\nHello plain");
});

Deno.test("discord: content in markdown with mentions switched off", () => {
  const body = renderEmail(email({ text: "@everyone look" }), { format: "discord" });
  assert.deepEqual(body, {
    content: "**Héllo report**\nFrom: Ann Example <ann@example.test>\n\n@everyone look",
    allowed_mentions: { parse: [] },
  });
});

Deno.test("discord: markdown in the subject cannot break the bold", () => {
  const body = renderEmail(email({ subject: "**50%** off_now" }), { format: "discord" });
  assert.match(body.content as string, /^\*\*\\\*\\\*50%\\\*\\\* off\\_now\*\*\n/);
});

Deno.test("discord: a 10,000-character email is cut to 2000 characters", () => {
  const content = renderEmail(email({ text: "a".repeat(10_000) }), { format: "discord" }).content as string;
  assert.equal(content.length, 2_000);
  assert.ok(content.endsWith("a…"));
});

Deno.test("discord: an emoji at the cut is kept whole or dropped, never split", () => {
  // Shift the text by one unit at a time so that the cut falls on each half of the emoji.
  for (let shift = 0; shift < 4; shift++) {
    const content = renderEmail(email({ text: "x".repeat(shift) + "😀".repeat(5_000) }), {
      format: "discord",
    }).content as string;
    assert.ok(content.length <= 2_000, `length ${content.length} with shift ${shift}`);
    assert.ok(!hasLoneSurrogate(content), `lone surrogate with shift ${shift}`);
    assert.ok(content.endsWith("😀…"));
  }
});

Deno.test("discord: a huge subject and sender still leave a valid message", () => {
  const content = renderEmail(
    email({
      subject: "*".repeat(5_000),
      from: { name: "_".repeat(5_000), email: `${"b".repeat(5_000)}@example.test` },
      text: "t".repeat(5_000),
    }),
    { format: "discord" },
  ).content as string;
  assert.ok(content.length <= 2_000);
  assert.ok(content.startsWith("**\\*"));
  assert.match(content, /…\*\*\nFrom: /);
});

Deno.test("teams: an Adaptive Card message Teams workflows accept", () => {
  const body = renderEmail(
    email({ attachments: [attachment, { ...attachment, filename: "b.png", size: 2048 }] }),
    {
      format: "teams",
    },
  );
  assert.deepEqual(body, {
    type: "message",
    attachments: [{
      contentType: "application/vnd.microsoft.card.adaptive",
      contentUrl: null,
      content: {
        $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
        type: "AdaptiveCard",
        version: "1.2",
        body: [
          { type: "TextBlock", text: "Héllo report", weight: "Bolder", size: "Medium", wrap: true },
          {
            type: "FactSet",
            facts: [
              { title: "From", value: "Ann Example <ann@example.test>" },
              { title: "Attachments", value: "r.pdf (9 B), b.png (2.0 KB)" },
            ],
          },
          { type: "TextBlock", text: "Hello plain", wrap: true },
        ],
      },
    }],
  });
});

Deno.test("teams: no Attachments fact without attachments", () => {
  const card = (renderEmail(email(), { format: "teams" }) as any).attachments[0].content;
  assert.deepEqual(card.body[1].facts, [{ title: "From", value: "Ann Example <ann@example.test>" }]);
});

Deno.test("teams: the serialized body stays under 20 KB, whatever the text holds", () => {
  const texts = ["a".repeat(100_000), "é".repeat(100_000), "😀".repeat(50_000), '"\\\n\u0001'.repeat(30_000)];
  for (const text of texts) {
    const body = renderEmail(email({ text, subject: "s".repeat(10_000) }), { format: "teams" });
    const bytes = new TextEncoder().encode(JSON.stringify(body)).length;
    assert.ok(bytes <= 20_000, `${bytes} bytes`);
    assert.ok(bytes > 19_000, `${bytes} bytes: the budget should be used`);
    const cut = (body as any).attachments[0].content.body[2].text as string;
    assert.ok(cut.endsWith("…"));
    assert.ok(!hasLoneSurrogate(cut));
  }
});

Deno.test("telegram: HTML message with the sender escaped and previews off", () => {
  const body = renderEmail(email(), { format: "telegram", options: { chat_id: "-1001234567890" } });
  assert.deepEqual(body, {
    chat_id: -1001234567890,
    text: "<b>Héllo report</b>\nFrom: Ann Example &lt;ann@example.test&gt;\n\nHello plain",
    parse_mode: "HTML",
    link_preview_options: { is_disabled: true },
  });
});

Deno.test("telegram: chat_id is a number for integer ids and a string for channel names", () => {
  const chatId = (id: string) =>
    renderEmail(email(), { format: "telegram", options: { chat_id: id } }).chat_id;
  assert.equal(chatId("-1001234"), -1001234);
  assert.equal(chatId("42"), 42);
  assert.equal(chatId("@channel"), "@channel");
  assert.equal(chatId("99999999999999999999"), "99999999999999999999");
  assert.throws(() => renderEmail(email(), { format: "telegram" }), /Missing option "chat_id"/);
});

Deno.test("telegram: <script> and & in the email are escaped", () => {
  const text = renderEmail(
    email({
      subject: "<i>x</i> & y",
      text: "<script>alert('x')</script> & <b>",
    }),
    { format: "telegram", options: { chat_id: "1" } },
  ).text as string;
  assert.equal(
    text,
    "<b>&lt;i&gt;x&lt;/i&gt; &amp; y</b>\nFrom: Ann Example &lt;ann@example.test&gt;\n\n" +
      "&lt;script&gt;alert('x')&lt;/script&gt; &amp; &lt;b&gt;",
  );
});

/** What Telegram counts of an HTML-mode text: the text shown (tags gone, entities decoded), in code points. */
function telegramShown(html: string): number {
  const shown = html.replace(/<\/?b>/g, "").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll(
    "&amp;",
    "&",
  );
  return [...shown].length;
}

Deno.test("telegram: heavy escaping does not shrink the text shown: 4096 characters as Telegram counts them", () => {
  const text = renderEmail(email({ text: "&".repeat(5_000) }), {
    format: "telegram",
    options: { chat_id: "1" },
  }).text as string;
  assert.equal(telegramShown(text), 4_096);
  assert.ok(text.endsWith("&amp;…"));
});

Deno.test("telegram: cut to 4096 characters shown, no entity or tag broken", () => {
  const texts = ["&".repeat(5_000), "<script>".repeat(1_000), "a&b<c>".repeat(2_000), "😀".repeat(5_000)];
  for (const [i, body] of texts.entries()) {
    for (let shift = 0; shift < 5; shift++) {
      const text = renderEmail(email({ text: "x".repeat(shift) + body }), {
        format: "telegram",
        options: { chat_id: "1" },
      }).text as string;
      const where = `text ${i}, shift ${shift}`;
      assert.equal(telegramShown(text), 4_096, where);
      assert.ok(text.endsWith("…"), where);
      // Every `&` still begins a whole entity, and the only tags are the header's bold.
      assert.ok(/^(?:[^&]|&amp;|&lt;|&gt;)*$/.test(text), `${where}: broken entity`);
      assert.equal(text.replace(/<\/?b>/g, "").includes("<"), false, where);
      assert.ok(text.startsWith("<b>Héllo report</b>\n"), where);
      assert.ok(!hasLoneSurrogate(text), where);
    }
  }
});

Deno.test("telegram: a text that fits is not cut, however much escaping it needs", () => {
  const body = "<&>".repeat(1_300);
  const text = renderEmail(email({ text: body }), { format: "telegram", options: { chat_id: "1" } })
    .text as string;
  assert.ok(text.endsWith("&lt;&amp;&gt;".repeat(1_300)));
  assert.ok(telegramShown(text) <= 4_096);
});

Deno.test("telegram: a huge subject is cut inside the bold, which stays closed", () => {
  const text = renderEmail(email({ subject: "&".repeat(5_000), text: "body" }), {
    format: "telegram",
    options: { chat_id: "1" },
  }).text as string;
  assert.ok(telegramShown(text) <= 4_096);
  assert.match(text, /^<b>(?:&amp;)+…<\/b>\nFrom: .*\n\nbody$/);
});

Deno.test("pagerduty: an Events API v2 trigger with the required fields", () => {
  const body = renderEmail(email(), { format: "pagerduty", options: { routing_key: "R".repeat(32) } });
  assert.deepEqual(body, {
    routing_key: "R".repeat(32),
    event_action: "trigger",
    dedup_key: "<m1@example.test>",
    payload: {
      summary: "Héllo report",
      source: "ann@example.test",
      severity: "info",
      timestamp: "2026-11-21T10:00:00.000Z",
      custom_details: { text: "Hello plain", from_name: "Ann Example" },
    },
  });
});

Deno.test("pagerduty: severity option, known values only", () => {
  const severity = (value?: string) =>
    (renderEmail(email(), {
      format: "pagerduty",
      options: { routing_key: "k", ...(value === undefined ? {} : { severity: value }) },
    }) as any).payload.severity;
  for (const known of ["critical", "error", "warning", "info"]) assert.equal(severity(known), known);
  assert.equal(severity("Critical"), "critical");
  assert.equal(severity("fatal"), "info");
  assert.equal(severity(), "info");
});

Deno.test("pagerduty: limits and fallbacks for empty fields", () => {
  const body = renderEmail(
    email({
      externalMessageId: "i".repeat(300),
      subject: "s".repeat(2_000),
      from: { email: "", name: "" },
    }),
    { format: "pagerduty", options: { routing_key: "k" } },
  ) as any;
  assert.equal(body.dedup_key, "i".repeat(255));
  assert.equal(body.payload.summary.length, 1_024);
  assert.equal(body.payload.source, "unknown");
  const empty = renderEmail(email({ subject: "", externalMessageId: "" }), {
    format: "pagerduty",
    options: { routing_key: "k" },
  }) as any;
  assert.equal(empty.payload.summary, "(no subject)");
  assert.equal("dedup_key" in empty, false);
  assert.throws(() => renderEmail(email(), { format: "pagerduty" }), /Missing option "routing_key"/);
});

Deno.test("pagerduty: a huge text keeps the event under 512 KB", () => {
  const body = renderEmail(email({ text: "\u0001".repeat(1_000_000) }), {
    format: "pagerduty",
    options: { routing_key: "k" },
  });
  assert.ok(new TextEncoder().encode(JSON.stringify(body)).length < 512 * 1024);
});

Deno.test("custom: the template filled from the email payload", () => {
  const body = renderEmail(email({ attachments: [attachment] }), {
    format: "custom",
    template: { title: "{{subject}}", who: "{{from.name}} <{{from.email}}>", file: "{{attachments[0]}}" },
  });
  assert.deepEqual(body, { title: "Héllo report", who: "Ann Example <ann@example.test>", file: attachment });
  assert.throws(() => renderEmail(email(), { format: "custom" }), /Missing template/);
});
