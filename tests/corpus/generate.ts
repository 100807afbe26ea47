// Writes the large or binary corpus messages into tests/corpus/generated/, which git ignores:
// megabytes of generated mail are cheaper to rebuild than to commit, and NUL bytes are unreadable
// in a diff. Run directly (`deno run --allow-read --allow-write tests/corpus/generate.ts`) or
// let the tests call `ensureGeneratedCorpus()`.

/** Folder of the generated messages. */
export const GENERATED_DIR: string = new URL("./generated/", import.meta.url).pathname;

const CRLF = "\r\n";

function ascii(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function baseHeaders(subject: string, id: string): string {
  return [
    "From: Ann <ann@example.test>",
    "To: hook-abc@in.svc.test",
    `Subject: ${subject}`,
    `Message-ID: <${id}@example.test>`,
    "MIME-Version: 1.0",
  ].join(CRLF) + CRLF;
}

/** `count` X- headers after the usual ones, then a one-line body. */
function manyHeaders(count: number, id: string): Uint8Array {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) lines.push(`X-Filler-${i}: value number ${i}`);
  return ascii(
    baseHeaders(`${count} headers`, id) + lines.join(CRLF) + CRLF + CRLF + "Body after many headers." + CRLF,
  );
}

/** A 1.5 MiB header block made of 300 lines of 5,000 characters: few lines, too many bytes. */
function hugeHeaderBlock(): Uint8Array {
  const lines: string[] = [];
  for (let i = 0; i < 300; i++) lines.push(`X-Big-${i}: ${"h".repeat(5000)}`);
  return ascii(
    baseHeaders("Huge header block", "huge-headers") + lines.join(CRLF) + CRLF + CRLF + "Body." + CRLF,
  );
}

/** `depth` multipart/mixed levels, each declaring its own boundary, with a text leaf at the bottom. */
function nestedMultipart(depth: number): Uint8Array {
  let text = baseHeaders(`Nested ${depth}`, `nested-${depth}`);
  for (let level = 0; level < depth; level++) {
    text += `Content-Type: multipart/mixed; boundary="level-${level}"` + CRLF + CRLF;
    text += `--level-${level}` + CRLF;
  }
  text += "Content-Type: text/plain" + CRLF + CRLF + `Leaf at depth ${depth}.` + CRLF;
  for (let level = depth - 1; level >= 0; level--) text += `--level-${level}--` + CRLF;
  return ascii(text);
}

/** `depth` message/rfc822 parts inside each other, with no boundary at all. */
function nestedRfc822(depth: number): Uint8Array {
  let text = "";
  for (let level = 0; level < depth; level++) {
    text += `From: level${level}@example.test` + CRLF + `Subject: level ${level}` + CRLF;
    text += "Content-Type: message/rfc822" + CRLF + CRLF;
  }
  return ascii(text + "From: leaf@example.test" + CRLF + CRLF + "Innermost." + CRLF);
}

/** Base64 with 76-character lines, as mail clients write it. */
function base64Lines(bytes: Uint8Array): string {
  let binary = "";
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) {
    binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  }
  const encoded = btoa(binary);
  const lines: string[] = [];
  for (let i = 0; i < encoded.length; i += 76) lines.push(encoded.slice(i, i + 76));
  return lines.join(CRLF);
}

/** The bytes of the 8 MiB attachment: a repeating 0..250 ramp, so tests can check content. */
export function largeAttachmentBytes(): Uint8Array {
  const bytes = new Uint8Array(8 * 1024 * 1024);
  for (let i = 0; i < bytes.length; i++) bytes[i] = i % 251;
  return bytes;
}

function largeAttachment(): Uint8Array {
  return ascii(
    baseHeaders("8 MiB attachment", "large-attachment") +
      'Content-Type: multipart/mixed; boundary="large"' + CRLF + CRLF +
      "--large" + CRLF + "Content-Type: text/plain" + CRLF + CRLF + "The archive is attached." + CRLF +
      "--large" + CRLF +
      'Content-Type: application/zip; name="archive.zip"' + CRLF +
      'Content-Disposition: attachment; filename="archive.zip"' + CRLF +
      "Content-Transfer-Encoding: base64" + CRLF + CRLF +
      base64Lines(largeAttachmentBytes()) + CRLF +
      "--large--" + CRLF,
  );
}

/** A 2 MiB body line with no line break anywhere in it. */
function longLine(): Uint8Array {
  return ascii(
    baseHeaders("Long line", "long-line") + "Content-Type: text/plain" + CRLF + CRLF +
      "x".repeat(2 * 1024 * 1024),
  );
}

/** 2 MiB without a single line break: the whole message is one unterminated header line. */
function singleLineNoNewline(): Uint8Array {
  return ascii("Subject: " + "y".repeat(2 * 1024 * 1024));
}

/** NUL bytes, bare CR and bare LF in the body and a NUL in the subject. */
function nulAndBareLineEnds(): Uint8Array {
  return concatBytes([
    ascii("From: ann@example.test\r\nTo: hook-abc@in.svc.test\r\nSubject: nul"),
    new Uint8Array([0]),
    ascii("byte\r\nMessage-ID: <nul-1@example.test>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"),
    ascii("before"),
    new Uint8Array([0, 0]),
    ascii("after\rbare-cr\nbare-lf\r\ncrlf\r\r\nend"),
    new Uint8Array([0]),
    ascii("\r\n"),
  ]);
}

/** Sixty small attachments: more than the default limit of 50. */
function manyAttachments(count: number): Uint8Array {
  let text = baseHeaders(`${count} attachments`, "many-attachments") +
    'Content-Type: multipart/mixed; boundary="many"' + CRLF + CRLF +
    "--many" + CRLF + "Content-Type: text/plain" + CRLF + CRLF + "Lots of files." + CRLF;
  for (let i = 1; i <= count; i++) {
    text += "--many" + CRLF + `Content-Type: text/plain; name="file-${i}.txt"` + CRLF +
      `Content-Disposition: attachment; filename="file-${i}.txt"` + CRLF + CRLF + `content ${i}` + CRLF;
  }
  return ascii(text + "--many--" + CRLF);
}

/** Thousands of sibling parts: flat, but more MIME nodes than mailparser allows (1,000). */
function manyParts(count: number): Uint8Array {
  let text = baseHeaders(`${count} parts`, "many-parts") + 'Content-Type: multipart/mixed; boundary="p"' +
    CRLF +
    CRLF;
  for (let i = 0; i < count; i++) text += "--p" + CRLF + CRLF + `part ${i}` + CRLF;
  return ascii(text + "--p--" + CRLF);
}

/** HTML-only mail of 90,000 nested <div>s: cheap to send, seconds of synchronous work to turn into text. */
function deepHtml(): Uint8Array {
  const depth = 90_000;
  return ascii(
    baseHeaders("Deep HTML", "deep-html") + "Content-Type: text/html; charset=utf-8" + CRLF + CRLF +
      "<div>".repeat(depth) + "deep" + "</div>".repeat(depth) + CRLF,
  );
}

/** Generated corpus file name -> its bytes. */
export const GENERATED_CORPUS: Record<string, () => Uint8Array> = {
  "many_headers_5000.eml": () => manyHeaders(5000, "many-headers-5000"),
  "too_many_headers_12000.eml": () => manyHeaders(12_000, "many-headers-12000"),
  "huge_header_block.eml": hugeHeaderBlock,
  "nested_50.eml": () => nestedMultipart(50),
  "nested_100.eml": () => nestedMultipart(100),
  "nested_rfc822_100.eml": () => nestedRfc822(100),
  "attachment_8mb.eml": largeAttachment,
  "long_line_2mb.eml": longLine,
  "single_line_no_newline.eml": singleLineNoNewline,
  "nul_and_bare_cr_lf.eml": nulAndBareLineEnds,
  "many_attachments_60.eml": () => manyAttachments(60),
  "many_parts_2000.eml": () => manyParts(2000),
  "deep_html.eml": deepHtml,
};

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await Deno.stat(path)).size;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/** Writes every generated message that is missing, or whose size shows it is stale. */
export async function ensureGeneratedCorpus(): Promise<void> {
  await Deno.mkdir(GENERATED_DIR, { recursive: true });
  for (const [name, build] of Object.entries(GENERATED_CORPUS)) {
    const path = GENERATED_DIR + name;
    const bytes = build();
    if (await sizeOf(path) !== bytes.length) await Deno.writeFile(path, bytes);
  }
}

if (import.meta.main) {
  await ensureGeneratedCorpus();
  console.log(`Corpus written to ${GENERATED_DIR}`);
}
