// Scans over a raw message's bytes, so hostile shapes are refused before mailparser sees them. Pure.
// The size and header checks read at most the 1 MiB header block and run on the caller's thread;
// the MIME structure scan is linear in the message (~0.3 s for 30 MB of "--" lines), so it runs in
// the parse worker.

import { Buffer } from "node:buffer";
import { EMAIL_PARSE_LIMITS } from "./parsed_email.ts";

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;

/** The reason to refuse `raw` on size and headers alone, or undefined. */
export function refusalBeforeParsing(raw: Uint8Array): string | undefined {
  const limits = EMAIL_PARSE_LIMITS;
  if (raw.length > limits.maxMessageBytes) {
    return `Message too large: ${raw.length} bytes, limit ${limits.maxMessageBytes}`;
  }
  if (isBlank(raw)) return `Empty message: ${raw.length} bytes of whitespace or nothing`;
  const header = measureHeaderBlock(raw);
  if (header.bytes > limits.maxHeaderBytes) {
    return `Headers too large: more than ${limits.maxHeaderBytes} bytes before the first blank line`;
  }
  if (header.fields > limits.maxHeaderLines) {
    return `Too many header lines: more than ${limits.maxHeaderLines}`;
  }
  return undefined;
}

function isBlank(raw: Uint8Array): boolean {
  for (const byte of raw) {
    if (byte !== SPACE && byte !== TAB && byte !== CR && byte !== LF) return false;
  }
  return true;
}

/** Size and field count of the top-level header block; stops counting once a limit is passed. */
function measureHeaderBlock(raw: Uint8Array): { bytes: number; fields: number } {
  const limits = EMAIL_PARSE_LIMITS;
  let fields = 0;
  let lineStart = 0;
  while (lineStart < raw.length) {
    if (lineStart > limits.maxHeaderBytes || fields > limits.maxHeaderLines) break;
    let lineEnd = raw.indexOf(LF, lineStart);
    if (lineEnd === -1) lineEnd = raw.length;
    const length = lineEnd - lineStart - (raw[lineEnd - 1] === CR && lineEnd > lineStart ? 1 : 0);
    if (length === 0) return { bytes: lineStart, fields };
    if (raw[lineStart] !== SPACE && raw[lineStart] !== TAB) fields++;
    lineStart = lineEnd + 1;
  }
  return { bytes: Math.min(lineStart, raw.length), fields };
}

/**
 * Whether multipart and message/rfc822 levels nest deeper than `limit`. Tracks the open boundaries
 * as mailsplit does: a delimiter line of an outer boundary closes every level inside it, so siblings
 * (a digest of 60 forwarded mails) do not add up, only real nesting does. A best-effort reading of
 * the structure: whatever it misses, mailsplit's own limit of 1,000 parts still bounds.
 */
export function mimeDepthExceeds(raw: Uint8Array, limit: number): boolean {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  // Boundaries of the enclosing multiparts, innermost last; null marks an enclosing message/rfc822.
  const open: (Buffer | null)[] = [];
  let pos = 0;
  let inHeaders = true;
  while (pos <= bytes.length) {
    if (inHeaders) {
      const part = readPartHeaders(bytes, pos);
      pos = part.bodyStart;
      const contentType = part.contentType.toLowerCase();
      const boundary = /^\s*multipart\//.test(contentType) ? boundaryOf(part.contentType) : undefined;
      const embedsMessage = !boundary && /^\s*message\/(rfc822|global)\b/.test(contentType);
      if (boundary) open.push(Buffer.from(boundary, "latin1"));
      if (embedsMessage) open.push(null);
      if (open.length > limit) return true;
      // An embedded message starts with its own headers; anything else has a body to scan.
      if (embedsMessage) continue;
    }
    if (!open.some((entry) => entry !== null)) return false;
    const delimiter = nextDelimiter(bytes, pos, open);
    if (!delimiter) return false;
    open.length = delimiter.openAfter;
    pos = delimiter.lineEnd;
    inHeaders = !delimiter.closing;
  }
  return false;
}

/** The Content-Type of the header block at `start` and where its body begins. */
function readPartHeaders(bytes: Buffer, start: number): { contentType: string; bodyStart: number } {
  const maxCaptured = 8192;
  let contentType = "";
  let capturing = false;
  let lineStart = start;
  while (lineStart < bytes.length) {
    let lineEnd = bytes.indexOf(LF, lineStart);
    if (lineEnd === -1) lineEnd = bytes.length;
    const contentEnd = lineEnd > lineStart && bytes[lineEnd - 1] === CR ? lineEnd - 1 : lineEnd;
    if (contentEnd === lineStart) return { contentType, bodyStart: lineEnd + 1 };
    const folded = bytes[lineStart] === SPACE || bytes[lineStart] === TAB;
    if (!folded) {
      capturing = contentType === "" &&
        bytes.toString("latin1", lineStart, Math.min(lineStart + 13, contentEnd)).toLowerCase() ===
          "content-type:";
    }
    if (capturing && contentType.length < maxCaptured) {
      const end = Math.min(contentEnd, lineStart + maxCaptured);
      contentType += bytes.toString("latin1", folded ? lineStart : lineStart + 13, end);
    }
    lineStart = lineEnd + 1;
  }
  return { contentType, bodyStart: bytes.length + 1 };
}

function boundaryOf(contentType: string): string | undefined {
  const match = /boundary\s*=\s*(?:"([^"]*)"|([^\s;]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  return boundary ? boundary : undefined;
}

const DELIMITER_START = Buffer.from("\n--", "latin1");
const HYPHEN = 0x2d;

/** The next line that opens a part of, or closes, one of the open multiparts. */
function nextDelimiter(
  bytes: Buffer,
  from: number,
  open: (Buffer | null)[],
): { lineEnd: number; openAfter: number; closing: boolean } | undefined {
  let lineStart = from;
  if (!(bytes[lineStart] === HYPHEN && bytes[lineStart + 1] === HYPHEN)) {
    const found = bytes.indexOf(DELIMITER_START, from);
    if (found === -1) return undefined;
    lineStart = found + 1;
  }
  while (true) {
    let lineEnd = bytes.indexOf(LF, lineStart);
    if (lineEnd === -1) lineEnd = bytes.length;
    let contentEnd = lineEnd;
    while (contentEnd > lineStart && isLineSpace(bytes[contentEnd - 1])) contentEnd--;
    // Compared as bytes, lengths first: millions of "--" lines cost no string per line.
    const length = contentEnd - lineStart;
    for (let level = open.length - 1; level >= 0; level--) {
      const boundary = open[level];
      if (boundary === null) continue;
      if (length !== boundary.length + 2 && length !== boundary.length + 4) continue;
      const valueStart = lineStart + 2;
      if (bytes.compare(boundary, 0, boundary.length, valueStart, valueStart + boundary.length) !== 0) {
        continue;
      }
      if (length === boundary.length + 2) {
        return { lineEnd: lineEnd + 1, openAfter: level + 1, closing: false };
      }
      const suffix = valueStart + boundary.length;
      if (bytes[suffix] === HYPHEN && bytes[suffix + 1] === HYPHEN) {
        return { lineEnd: lineEnd + 1, openAfter: level, closing: true };
      }
    }
    const found = bytes.indexOf(DELIMITER_START, lineEnd);
    if (found === -1) return undefined;
    lineStart = found + 1;
  }
}

function isLineSpace(byte: number): boolean {
  return byte === CR || byte === SPACE || byte === TAB;
}
