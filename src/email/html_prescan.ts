// The HTML of a raw message measured before any parser runs (html_measure.ts), on the receiving
// thread, so a parse bomb is refused in milliseconds and never takes a parse worker: the inline
// text/html parts are found by their MIME headers, decoded from base64 or quoted-printable, and
// measured as mailparser will join them, up to the body bound. The work is bounded: a structure it
// cannot follow cheaply, or a charset whose bytes are not ASCII's, is left to the parse worker, which
// measures the decoded HTML again before converting it (from_mailparser.ts).

import { Buffer } from "node:buffer";
import { boundaryOf, nextDelimiter, type PartHeaders, readPartHeaders } from "./mime_scan.ts";
import { HtmlMeasure } from "./html_measure.ts";
import { EMAIL_PARSE_LIMITS, HTML_BOUNDS } from "./parsed_email.ts";

/** Charsets in which "<" is not always the byte 0x3C (or 0x3C not always "<"): left to the worker. */
const NOT_ASCII_COMPATIBLE = /^(x-)?(utf-?7|utf-?16|utf-?32|ucs-?[24]|unicode|iso-?2022|csiso2022|hz)/;

/** The reason to refuse `raw` for its HTML, or undefined (within bounds, or left to the worker). */
export function htmlRefusalBeforeParsing(raw: Uint8Array): string | undefined {
  const limits = EMAIL_PARSE_LIMITS;
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const measure = new HtmlMeasure(HTML_BOUNDS);
  const budget = { lines: limits.maxPrescanDelimiterLines };
  // Boundaries of the enclosing multiparts, innermost last; null marks an enclosing message/rfc822.
  const open: (Buffer | null)[] = [];
  let htmlLeft = limits.maxBodyBytes;
  let pos = 0;
  let inHeaders = true;
  let html: PartHeaders | undefined;
  while (pos <= bytes.length) {
    if (inHeaders) {
      const part = readPartHeaders(bytes, pos);
      pos = part.bodyStart;
      const type = mediaType(part.contentType);
      const boundary = type.startsWith("multipart/") ? boundaryOf(part.contentType) : undefined;
      const embedsMessage = !boundary && (type === "message/rfc822" || type === "message/global");
      if (boundary) open.push(Buffer.from(boundary, "latin1"));
      if (embedsMessage) open.push(null);
      // The worker refuses that depth itself.
      if (open.length > limits.maxMimeDepth) return measure.refusal;
      if (embedsMessage) continue;
      html = !boundary && isBodyHtml(type, part) ? part : undefined;
    }
    if (!open.some((entry) => entry !== null)) {
      if (html) measurePart(measure, bytes.subarray(pos), html, htmlLeft);
      return measure.refusal;
    }
    const delimiter = nextDelimiter(bytes, { from: pos, open, budget });
    // Out of budget, the part's end is unknown: what was measured so far decides.
    if (budget.lines < 0) return measure.refusal;
    if (html && htmlLeft > 0) {
      const body = bytes.subarray(pos, delimiter ? delimiter.lineStart : bytes.length);
      htmlLeft -= measurePart(measure, body, html, htmlLeft);
      if (measure.refusal) return measure.refusal;
    }
    if (!delimiter) return measure.refusal;
    open.length = delimiter.openAfter;
    pos = delimiter.lineEnd;
    inHeaders = !delimiter.closing;
    html = undefined;
  }
  return measure.refusal;
}

/** `type/subtype` of a Content-Type, lowercase; text/plain when there is none, as for mailparser. */
function mediaType(contentType: string): string {
  const type = contentType.split(";", 1)[0].trim().toLowerCase();
  return type === "" ? "text/plain" : type;
}

/** An HTML part mailparser puts in the body (not an attachment), in a charset these bytes can show. */
function isBodyHtml(type: string, part: PartHeaders): boolean {
  if (type !== "text/html") return false;
  const disposition = part.disposition.split(";", 1)[0].trim().toLowerCase();
  if (disposition !== "" && disposition !== "inline") return false;
  const charset = /charset\s*=\s*"?([^";\s]*)/i.exec(part.contentType)?.[1]?.toLowerCase() ?? "";
  return !NOT_ASCII_COMPATIBLE.test(charset);
}

/** Feeds the decoded body of one HTML part to the measure; answers the decoded bytes measured. */
function measurePart(measure: HtmlMeasure, body: Buffer, part: PartHeaders, maxBytes: number): number {
  const encoding = part.transferEncoding.trim().toLowerCase();
  let decoded: Uint8Array;
  if (encoding === "base64") {
    // 4 characters make 3 bytes; line breaks and stray characters are skipped, so take some more.
    const encoded = body.subarray(0, Math.ceil(maxBytes / 3) * 4 + Math.ceil(maxBytes / 38) + 1024);
    decoded = decodeBase64(encoded.toString("latin1")).subarray(0, maxBytes);
  } else if (encoding === "quoted-printable") {
    decoded = decodeQuotedPrintable(body, maxBytes);
  } else {
    decoded = body.subarray(0, maxBytes);
  }
  measure.write(decoded);
  return decoded.length;
}

type FromBase64 = (text: string, options: { lastChunkHandling: "loose" }) => Uint8Array;

/** Base64 to bytes, whitespace skipped; the text may end in the middle of a line. */
function decodeBase64(text: string): Uint8Array {
  // The typed array's own decoder is native (Buffer's runs in JavaScript here and is ten times
  // slower); it refuses stray characters and a cut quantum, which the lenient one then takes.
  const fromBase64 = (Uint8Array as unknown as { fromBase64?: FromBase64 }).fromBase64;
  const lastLine = text.lastIndexOf("\n");
  if (fromBase64) {
    try {
      return fromBase64(lastLine === -1 ? text : text.slice(0, lastLine + 1), { lastChunkHandling: "loose" });
    } catch {
      // Not clean base64: mailparser's decoder skips what it cannot read, and so does Buffer's.
    }
  }
  return Buffer.from(text, "base64");
}

const EQUALS = 0x3d;
const CR = 0x0d;
const LF = 0x0a;

/** Quoted-printable to bytes, at most `maxBytes`: "=XX" is a byte, "=" at a line end joins lines. */
export function decodeQuotedPrintable(body: Uint8Array, maxBytes: number): Uint8Array {
  const out = new Uint8Array(Math.min(body.length, maxBytes));
  let length = 0;
  for (let i = 0; i < body.length && length < out.length; i++) {
    const c = body[i];
    if (c !== EQUALS) {
      out[length++] = c;
      continue;
    }
    const high = hexValue(body[i + 1]);
    const low = hexValue(body[i + 2]);
    if (high >= 0 && low >= 0) {
      out[length++] = high * 16 + low;
      i += 2;
    } else if (body[i + 1] === LF) {
      i += 1;
    } else if (body[i + 1] === CR && body[i + 2] === LF) {
      i += 2;
    } else {
      out[length++] = c;
    }
  }
  return out.subarray(0, length);
}

function hexValue(c: number | undefined): number {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}
