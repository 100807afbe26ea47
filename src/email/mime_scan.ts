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
    const delimiter = nextDelimiter(bytes, { from: pos, open });
    if (!delimiter) return false;
    open.length = delimiter.openAfter;
    pos = delimiter.lineEnd;
    inHeaders = !delimiter.closing;
  }
  return false;
}

/** The headers of one part that say what its body is, as written (unfolded, latin1). */
export interface PartHeaders {
  contentType: string;
  transferEncoding: string;
  disposition: string;
  /** Where the body begins: past the blank line, or past the end when there is none. */
  bodyStart: number;
}

const CAPTURED_HEADERS = [
  ["content-type:", "contentType"],
  ["content-transfer-encoding:", "transferEncoding"],
  ["content-disposition:", "disposition"],
] as const;

/** The headers of the header block at `start` that say what its body is, and where the body begins. */
export function readPartHeaders(bytes: Buffer, start: number): PartHeaders {
  const maxCaptured = 8192;
  const found: Omit<PartHeaders, "bodyStart"> = { contentType: "", transferEncoding: "", disposition: "" };
  let capturing: keyof typeof found | undefined;
  let lineStart = start;
  while (lineStart < bytes.length) {
    let lineEnd = bytes.indexOf(LF, lineStart);
    if (lineEnd === -1) lineEnd = bytes.length;
    const contentEnd = lineEnd > lineStart && bytes[lineEnd - 1] === CR ? lineEnd - 1 : lineEnd;
    if (contentEnd === lineStart) return { ...found, bodyStart: lineEnd + 1 };
    const folded = bytes[lineStart] === SPACE || bytes[lineStart] === TAB;
    let valueStart = lineStart;
    if (!folded) {
      capturing = undefined;
      // The first of each field counts, as the first Content-Type did before.
      const name = bytes.toString("latin1", lineStart, Math.min(lineStart + 26, contentEnd)).toLowerCase();
      for (const [prefix, field] of CAPTURED_HEADERS) {
        if (name.startsWith(prefix) && found[field] === "") {
          capturing = field;
          valueStart = lineStart + prefix.length;
        }
      }
    }
    if (capturing && found[capturing].length < maxCaptured) {
      const end = Math.min(contentEnd, valueStart + maxCaptured);
      found[capturing] += bytes.toString("latin1", valueStart, end);
    }
    lineStart = lineEnd + 1;
  }
  return { ...found, bodyStart: bytes.length + 1 };
}

/** The boundary parameter of a multipart Content-Type. */
export function boundaryOf(contentType: string): string | undefined {
  const match = /boundary\s*=\s*(?:"([^"]*)"|([^\s;]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  return boundary ? boundary : undefined;
}

const HYPHEN = 0x2d;
const indexOfByte = Uint8Array.prototype.indexOf;

/**
 * The start of the next line at or after `from` that begins with "--" (not the first line), or -1.
 * Searches for the byte "-" with the typed array's native search: Buffer's for "\n--" runs in
 * JavaScript here and is five times slower, and base64 holds no "-" at all.
 */
function nextDashLine(bytes: Buffer, from: number): number {
  let at = from;
  while (true) {
    at = indexOfByte.call(bytes, HYPHEN, at);
    if (at === -1) return -1;
    if (at > 0 && bytes[at - 1] === LF && bytes[at + 1] === HYPHEN) return at;
    at += bytes[at + 1] === HYPHEN ? 2 : 1;
  }
}

/** A delimiter line found: where it starts and ends, how many multiparts stay open after it. */
export interface Delimiter {
  lineStart: number;
  lineEnd: number;
  openAfter: number;
  closing: boolean;
}

/** How many candidate lines ("--" at a line start) a search may still look at. */
export interface ScanBudget {
  lines: number;
}

/**
 * The next line that opens a part of, or closes, one of the open multiparts; undefined when there is
 * none, or when `budget` runs out first (then `budget.lines` is below 0).
 */
export function nextDelimiter(
  bytes: Buffer,
  { from, open, budget = { lines: Infinity } }: {
    from: number;
    open: (Buffer | null)[];
    budget?: ScanBudget;
  },
): Delimiter | undefined {
  let lineStart = from;
  if (!(bytes[lineStart] === HYPHEN && bytes[lineStart + 1] === HYPHEN)) {
    lineStart = nextDashLine(bytes, from);
    if (lineStart === -1) return undefined;
  }
  while (true) {
    if (--budget.lines < 0) return undefined;
    let lineEnd = indexOfByte.call(bytes, LF, lineStart);
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
        return { lineStart, lineEnd: lineEnd + 1, openAfter: level + 1, closing: false };
      }
      const suffix = valueStart + boundary.length;
      if (bytes[suffix] === HYPHEN && bytes[suffix + 1] === HYPHEN) {
        return { lineStart, lineEnd: lineEnd + 1, openAfter: level, closing: true };
      }
    }
    lineStart = nextDashLine(bytes, lineEnd);
    if (lineStart === -1) return undefined;
  }
}

function isLineSpace(byte: number): boolean {
  return byte === CR || byte === SPACE || byte === TAB;
}
