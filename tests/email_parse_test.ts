// Every message in tests/corpus goes through parseEmailSafely: hostile ones come back refused with a
// reason or parsed into sane fields, none throws, none takes more than a few seconds.
import assert from "node:assert/strict";
import { random as seededSource } from "./helpers/sim/model.ts";
import {
  EMAIL_PARSE_LIMITS,
  EmailParseError,
  type ParsedEmail,
  parseEmail,
  parseEmailSafely,
  type ParseEmailSafelyOptions,
  type ParseOutcome,
  sanitizeFilename,
} from "../src/email/parse.ts";
import {
  ensureGeneratedCorpus,
  GENERATED_CORPUS,
  GENERATED_DIR,
  largeAttachmentBytes,
} from "./corpus/generate.ts";

await ensureGeneratedCorpus();

const CORPUS_DIR = new URL("./corpus/", import.meta.url).pathname;
const FIXED_MESSAGE_ID = "<generated-fixed@local>";
/** Generous for a slow CI machine; locally every message takes well under a second. */
const MAX_PARSE_MS = 5000;

function corpusPath(name: string): string {
  return name in GENERATED_CORPUS ? GENERATED_DIR + name : CORPUS_DIR + name;
}

async function parseTimed(raw: Uint8Array, options: ParseEmailSafelyOptions = {}) {
  const start = performance.now();
  const outcome = await parseEmailSafely(raw, { generateMessageId: () => FIXED_MESSAGE_ID, ...options });
  return { outcome, ms: performance.now() - start };
}

function parsed(outcome: ParseOutcome): ParsedEmail {
  if (!outcome.ok) assert.fail(`Expected a parsed email, got refusal: ${outcome.reason}`);
  return outcome.email;
}

function utf8(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

function ascii(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

type CorpusCase =
  | { refused: RegExp; timeoutMs?: number }
  | { check: (email: ParsedEmail) => void | Promise<void> };

const CORPUS: Record<string, CorpusCase> = {
  // Ordinary mail
  "plain.eml": {
    check(email) {
      assert.equal(email.messageId, "<plain-1@example.test>");
      assert.deepEqual(email.from, { email: "ann@example.test", name: "Ann Example" });
      assert.deepEqual(email.to, [{ email: "hook-abc@in.svc.test", name: "Hook" }]);
      assert.deepEqual(email.cc, [
        { email: "bob@example.test", name: "Bob, the Builder" },
        { email: "carol@example.test", name: "" },
      ]);
      assert.equal(email.subject, "Weekly report");
      assert.equal(email.text, "Hello,\n\nthe weekly report is ready.\n\nAnn\n");
      assert.equal(email.html, "");
      assert.deepEqual(email.attachments, []);
      assert.equal(email.truncated, false);
      assert.equal(email.headers.length, 11);
      assert.deepEqual(email.headers[0], ["Return-Path", "<ann@example.test>"]);
      // Folded headers come back unfolded, on one line.
      assert.deepEqual(email.headers[1], [
        "Received",
        "from mx.example.test (mx.example.test [203.0.113.7])\tby in.svc.test with ESMTP id abc123" +
        "\tfor <hook-abc@in.svc.test>; Sat, 21 Nov 2026 10:00:00 +0000",
      ]);
      assert.deepEqual(email.headers[5], ["Subject", "Weekly report"]);
    },
  },
  "alternative.eml": {
    check(email) {
      assert.equal(email.subject, "Héllo report");
      assert.equal(email.text, "Héllo plain");
      assert.equal(email.html, "<p>Héllo <b>html</b></p>");
      assert.deepEqual(email.attachments, []);
    },
  },
  "two_attachments.eml": {
    check(email) {
      assert.deepEqual(email.to, [
        { email: "hook-abc@in.svc.test", name: "" },
        { email: "hook-def@in.svc.test", name: "Second Hook" },
      ]);
      assert.deepEqual(email.cc, [{ email: "dave@example.test", name: "Dave" }]);
      assert.equal(email.text, "See the two files.");
      const [pdf, csv] = email.attachments;
      assert.equal(email.attachments.length, 2);
      assert.equal(pdf.filename, "report.pdf");
      assert.equal(pdf.contentType, "application/pdf");
      assert.equal(pdf.size, 51);
      assert.equal(pdf.content.length, 51);
      assert.ok(utf8(pdf.content).startsWith("%PDF-1.4\n"));
      assert.equal(csv.filename, "peöple.csv"); // RFC 2231 filename*= decoded
      assert.equal(csv.contentType, "text/csv");
      assert.equal(utf8(csv.content), "id,name\n1,Ann\n2,Bob\n");
      assert.equal(csv.size, 20);
    },
  },
  "inline_image.eml": {
    check(email) {
      // Inline images with a Content-ID are attachments: the HTML needs them to render.
      assert.equal(email.attachments.length, 1);
      const [logo] = email.attachments;
      assert.equal(logo.filename, "attachment-1");
      assert.equal(logo.contentType, "image/png");
      assert.equal(logo.size, 66);
      assert.deepEqual([...logo.content.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
      assert.ok(email.html.includes('src="cid:logo@example.test"'), "cid: links stay as they are");
      assert.equal(email.text, "Our logo:\n\nLogo [cid:logo@example.test]");
    },
  },
  "forwarded_rfc822.eml": {
    check(email) {
      assert.equal(email.text, "Forwarding the message below.");
      assert.equal(email.attachments.length, 1);
      assert.equal(email.attachments[0].filename, "original.eml");
      assert.equal(email.attachments[0].contentType, "message/rfc822");
      assert.ok(utf8(email.attachments[0].content).includes("The original body."));
    },
  },

  // Malformed MIME
  "missing_closing_boundary.eml": {
    check(email) {
      assert.equal(email.text, "First part survives.");
      assert.equal(email.attachments.length, 1);
      assert.equal(email.attachments[0].filename, "data.bin");
      assert.deepEqual([...email.attachments[0].content], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    },
  },
  "undeclared_boundary.eml": {
    check(email) {
      // mailparser cannot split a multipart without a boundary and drops its body.
      assert.equal(email.subject, "Boundary never declared");
      assert.equal(email.text, "");
      assert.deepEqual(email.attachments, []);
    },
  },
  "garbage_transfer_encoding.eml": {
    check(email) {
      // An unknown Content-Transfer-Encoding is read as 7bit.
      assert.equal(email.text, "Plain words under a garbage encoding.\n");
    },
  },
  "broken_base64.eml": {
    check(email) {
      // Invalid characters are skipped, what decodes is kept.
      assert.ok(email.text.startsWith("Hello wor"), email.text);
      assert.equal(email.attachments.length, 1);
      assert.equal(email.attachments[0].filename, "broken.bin");
      assert.equal(email.attachments[0].size, email.attachments[0].content.length);
    },
  },
  "broken_quoted_printable.eml": {
    check(email) {
      assert.equal(email.text, "Bad escape =ZZ here, lone soft breakcontinues, truncated escape =4");
    },
  },

  // Charsets
  "utf8_declared_latin1_bytes.eml": {
    check(email) {
      assert.equal(email.text, "Caf\uFFFD cr\uFFFDme br\uFFFDl\uFFFDe\n");
    },
  },
  "unknown_charset.eml": {
    check(email) {
      assert.equal(email.subject, "nuqneH");
      assert.equal(email.text, "Qapla' ASCII survives\n");
    },
  },
  "iso_2022_jp.eml": {
    check(email) {
      assert.equal(email.subject, "日本語の件名");
      assert.equal(email.text, "こんにちは、世界\n");
      assert.deepEqual(email.from, { email: "yamada@example.test", name: "山田" });
    },
  },
  "windows_1252_smart_quotes.eml": {
    check(email) {
      assert.equal(email.subject, "\u201CSmart\u201D quotes");
      assert.equal(
        email.text,
        "\u201CQuoted\u201D and \u2018single\u2019 \u2013 it\u2019s \u20AC100\u2026\n",
      );
    },
  },
  "bad_encoded_word_subject.eml": {
    check(email) {
      assert.ok(email.subject.startsWith("Hello"), email.subject);
      assert.ok(email.subject.endsWith("=?utf-8?Q?unterminated"), email.subject);
      assert.equal(email.from.email, "ann@example.test");
      assert.equal(email.text, "Body is fine.\n");
    },
  },

  // Missing pieces
  "no_from.eml": {
    check(email) {
      assert.deepEqual(email.from, { email: "", name: "" });
      assert.equal(email.subject, "Nobody sent this");
    },
  },
  "no_subject.eml": {
    check(email) {
      assert.equal(email.subject, "");
      assert.equal(email.text, "No Subject header.\n");
    },
  },
  "no_message_id.eml": {
    check(email) {
      assert.equal(email.messageId, FIXED_MESSAGE_ID);
    },
  },
  "no_date.eml": {
    check(email) {
      assert.equal(email.messageId, "<nodate-1@example.test>");
      assert.equal(email.text, "No Date header.\n");
    },
  },
  "no_body.eml": {
    check(email) {
      assert.equal(email.subject, "Headers only");
      assert.equal(email.text, "");
      assert.equal(email.html, "");
      assert.deepEqual(email.attachments, []);
    },
  },
  "empty.eml": { refused: /^Empty message/ },

  // Content that must pass through untouched, or must not leak
  "html_only_scripts.eml": {
    check(email) {
      assert.ok(email.html.includes("<script>"), "html is kept as sent");
      assert.equal(
        email.text,
        "Big sale\n\nEverything 50% off.\n\nVisit our shop [https://shop.example.test/sale].",
      );
      for (const leak of ["SCRIPT-LEAK", "STYLE-LEAK", "ONLOAD-LEAK", "Newsletter title", "color: red"]) {
        assert.ok(!email.text.includes(leak), `text must not contain ${leak}`);
      }
    },
  },
  "quotes_braces.eml": {
    check(email) {
      assert.equal(email.subject, 'He said "hi" \\ {{subject}} {name} \n second line');
      assert.deepEqual(email.from, { email: "quoter@example.test", name: 'O\'Brien "The Quoter"' });
      assert.equal(
        email.text,
        "Line with \"double\" and 'single' quotes\n" +
          "Backslashes: C:\\path\\to\\file \\n is not a newline\n" +
          "Braces: {{subject}} {{ text }} {name} ${notATemplate} `backtick`\n" +
          'JSON-ish: {"key": "value\\"", "n": [1, 2]}\n' +
          "\n" +
          "Blank line above, trailing spaces here:   \n",
      );
    },
  },
  "path_traversal_filename.eml": {
    check(email) {
      assert.equal(email.attachments.length, 1);
      const [file] = email.attachments;
      assert.equal(file.filename, "passwd");
      assert.equal(file.contentType, "text/plain");
      assert.equal(utf8(file.content), "root:x:0:0:root:/root:/bin/bash");
      assert.equal(file.size, 31);
    },
  },
  "odd_filenames.eml": {
    check(email) {
      const names = email.attachments.map((a) => a.filename);
      assert.equal(names[0], "evil.exe");
      assert.equal(names[1], "badname[31mgpj.exe"); // NUL, LF, ESC and U+202E removed
      assert.equal(names[2], "attachment-3");
      assert.equal(new TextEncoder().encode(names[3]).length, 255);
      assert.ok(names[3].endsWith("a.txt"));
      assert.equal(names[4], "attachment-5");
      for (const name of names) assert.doesNotMatch(name, /[\\/\p{Cc}\u202e]/u);
      assert.deepEqual(email.attachments.map((a) => a.contentType), [
        "application/x-msdownload",
        "text/plain",
        "application/octet-stream",
        "application/octet-stream", // "not a content type"
        "application/octet-stream",
      ]);
    },
  },

  // Generated: big, deep or binary
  "many_headers_5000.eml": {
    check(email) {
      assert.equal(email.subject, "5000 headers");
      assert.equal(email.text, "Body after many headers.\n");
      assert.equal(email.headers.length, EMAIL_PARSE_LIMITS.maxKeptHeaders);
      assert.deepEqual(email.headers.at(-1), ["X-Filler-194", "value number 194"]);
      assert.equal(email.truncated, false, "the headers view is bounded by definition, not a cut of content");
    },
  },
  "too_many_headers_12000.eml": { refused: /^Too many header lines: more than 10000$/ },
  "huge_header_block.eml": { refused: /^Headers too large/ },
  "single_line_no_newline.eml": { refused: /^Headers too large/ },
  "nested_50.eml": {
    check(email) {
      assert.equal(email.text, "Leaf at depth 50.");
    },
  },
  "nested_100.eml": { refused: /^MIME nesting too deep: more than 50 levels$/ },
  "nested_rfc822_100.eml": { refused: /^MIME nesting too deep/ },
  "many_parts_2000.eml": { refused: /^Cannot parse message: Max allowed child nodes exceeded/ },
  "attachment_8mb.eml": {
    async check(email) {
      assert.equal(email.attachments.length, 1);
      const [zip] = email.attachments;
      assert.equal(zip.filename, "archive.zip");
      assert.equal(zip.contentType, "application/zip");
      assert.equal(zip.size, 8 * 1024 * 1024);
      assert.equal(await sha256(zip.content), await sha256(largeAttachmentBytes()));
      assert.equal(email.truncated, false);
    },
  },
  "long_line_2mb.eml": {
    check(email) {
      assert.equal(email.truncated, true);
      assert.equal(email.text.length, EMAIL_PARSE_LIMITS.maxBodyBytes);
      assert.match(email.text, /^x+$/);
    },
  },
  "nul_and_bare_cr_lf.eml": {
    check(email) {
      assert.equal(email.subject, "nulbyte");
      assert.equal(email.text, "beforeafter\nbare-cr\nbare-lf\ncrlf\nend\n");
      assert.ok(email.headers.every(([name, value]) => !/[\0\r\n]/.test(name + value)));
    },
  },
  "many_attachments_60.eml": {
    check(email) {
      assert.equal(email.attachments.length, 50);
      assert.equal(email.attachments[49].filename, "file-50.txt");
      assert.equal(email.truncated, true);
    },
  },
  // html-to-text would need seconds of synchronous work here: the pre-scan refuses it before any worker.
  "deep_html.eml": { refused: /^HTML nested too deeply: more than 1000 open elements$/, timeoutMs: 300 },
};

Deno.test("every corpus file has an expectation, and every expectation a file", async () => {
  const files: string[] = [];
  for (const dir of [CORPUS_DIR, GENERATED_DIR]) {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile && entry.name.endsWith(".eml")) files.push(entry.name);
    }
  }
  assert.deepEqual(files.sort(), Object.keys(CORPUS).sort());
});

for (const [name, expected] of Object.entries(CORPUS)) {
  Deno.test(`corpus ${name}`, async () => {
    const raw = await Deno.readFile(corpusPath(name));
    const timeoutMs = "refused" in expected ? expected.timeoutMs : undefined;
    const { outcome, ms } = await parseTimed(raw, { timeoutMs });
    assert.ok(ms < MAX_PARSE_MS, `${name} took ${ms.toFixed(0)} ms`);
    if ("refused" in expected) {
      assert.equal(outcome.ok, false, `${name} should be refused`);
      if (!outcome.ok) assert.match(outcome.reason, expected.refused);
    } else {
      await expected.check(parsed(outcome));
    }
  });
}

Deno.test("a missing Message-ID gets a generated one by default", async () => {
  const raw = await Deno.readFile(corpusPath("no_message_id.eml"));
  const email = parsed(await parseEmailSafely(raw));
  assert.match(email.messageId, /^<generated-[0-9a-f-]{36}@local>$/);
});

Deno.test("maxAttachments keeps the first attachments and marks the email truncated", async () => {
  const raw = await Deno.readFile(corpusPath("two_attachments.eml"));
  const one = parsed(await parseEmailSafely(raw, { maxAttachments: 1 }));
  assert.deepEqual(one.attachments.map((a) => a.filename), ["report.pdf"]);
  assert.equal(one.truncated, true);
  const none = parsed(await parseEmailSafely(raw, { maxAttachments: 0 }));
  assert.deepEqual(none.attachments, []);
});

Deno.test("html over 1 MiB is cut between characters and so is the text made from it", async () => {
  const body = "<p>" + "é".repeat(700_000) + "</p>";
  const raw = ascii(
    "From: a@example.test\r\nSubject: big html\r\nContent-Type: text/html; charset=utf-8\r\n" +
      "Content-Transfer-Encoding: 8bit\r\n\r\n" + body + "\r\n",
  );
  const email = parsed(await parseEmailSafely(raw));
  const htmlBytes = new TextEncoder().encode(email.html).length;
  assert.ok(htmlBytes <= EMAIL_PARSE_LIMITS.maxBodyBytes && htmlBytes > EMAIL_PARSE_LIMITS.maxBodyBytes - 4);
  assert.ok(email.html.startsWith("<p>éé") && !email.html.includes("\uFFFD"));
  assert.match(email.text, /^é+$/);
  assert.equal(email.truncated, true);
});

Deno.test("parseEmail throws EmailParseError where parseEmailSafely returns a reason", async () => {
  await assert.rejects(() => parseEmail(new Uint8Array()), EmailParseError);
  const raw = await Deno.readFile(corpusPath("nested_100.eml"));
  await assert.rejects(() => parseEmail(raw), { name: "EmailParseError", message: /MIME nesting too deep/ });
  const email = await parseEmail(await Deno.readFile(corpusPath("plain.eml")));
  assert.equal(email.subject, "Weekly report");
});

Deno.test("parseEmailSafely answers bad arguments with a reason instead of throwing", async () => {
  const raw = await Deno.readFile(corpusPath("plain.eml"));
  assert.deepEqual(await parseEmailSafely(raw, { maxAttachments: -1 }), {
    ok: false,
    reason: 'Invalid maxAttachments "-1": must be an integer 0 to 1000',
  });
  assert.deepEqual(await parseEmailSafely(raw, { timeoutMs: 0 }), {
    ok: false,
    reason: 'Invalid timeoutMs "0": must be an integer 1 to 600000',
  });
  const notBytes = "From: a@example.test\r\n\r\nhi" as unknown as Uint8Array;
  assert.equal((await parseEmailSafely(notBytes)).ok, false);
  const throwingId = () => {
    throw new Error("no randomness today");
  };
  assert.deepEqual(await parseEmailSafely(raw, { generateMessageId: throwingId }), {
    ok: false,
    reason: "Cannot parse message: no randomness today",
  });
});

Deno.test("more parses than worker slots all complete", async () => {
  const raw = await Deno.readFile(corpusPath("two_attachments.eml"));
  const outcomes = await Promise.all(
    Array.from({ length: EMAIL_PARSE_LIMITS.maxConcurrentParses * 2 + 1 }, () => parseEmailSafely(raw)),
  );
  for (const outcome of outcomes) assert.equal(parsed(outcome).attachments.length, 2);
});

Deno.test("mutated corpus messages never throw and never hang", async () => {
  const sources = ["two_attachments.eml", "alternative.eml", "iso_2022_jp.eml", "odd_filenames.eml"];
  const random = seededSource(20261121).next;
  const interesting = ascii('\0\r\n-=?:;"<>\\');
  for (let round = 0; round < 16; round++) {
    const source = await Deno.readFile(corpusPath(sources[round % sources.length]));
    const raw = source.slice(0, Math.floor(source.length * (0.5 + random() / 2)));
    const flips = 1 + Math.floor(random() * 20);
    for (let i = 0; i < flips; i++) {
      const at = Math.floor(random() * raw.length);
      raw[at] = random() < 0.5
        ? interesting[Math.floor(random() * interesting.length)]
        : Math.floor(random() * 256);
    }
    const { outcome, ms } = await parseTimed(raw);
    assert.ok(ms < MAX_PARSE_MS, `round ${round} took ${ms.toFixed(0)} ms`);
    if (outcome.ok) {
      assert.equal(typeof outcome.email.text, "string");
      for (const attachment of outcome.email.attachments) {
        assert.doesNotMatch(attachment.filename, /[\\/\p{Cc}]/u);
        assert.equal(attachment.size, attachment.content.length);
      }
    } else {
      assert.ok(outcome.reason.length > 0, `round ${round}`);
    }
  }
});

Deno.test("sanitizeFilename strips paths and controls and keeps names within 255 bytes", () => {
  assert.equal(sanitizeFilename("../../etc/passwd", 1), "passwd");
  assert.equal(sanitizeFilename("C:\\Users\\ann\\report.pdf", 1), "report.pdf");
  assert.equal(sanitizeFilename("dir/", 1), "dir");
  assert.equal(sanitizeFilename(undefined, 3), "attachment-3");
  assert.equal(sanitizeFilename("  ", 4), "attachment-4");
  assert.equal(sanitizeFilename("../..", 5), "attachment-5");
  assert.equal(sanitizeFilename("a\u0000b\u0007c\u202Ed.txt", 1), "abcd.txt");
  const long = sanitizeFilename("é".repeat(300) + ".pdf", 1);
  assert.ok(long.endsWith("é.pdf"));
  assert.ok(new TextEncoder().encode(long).length <= 255);
  assert.equal(new TextDecoder("utf-8", { fatal: true }).decode(new TextEncoder().encode(long)), long);
});
