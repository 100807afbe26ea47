// Turns one raw inbound email into what the service stores and forwards (CONTRACT section 9).
// Input from the network is hostile: `parseEmailSafely` refuses by cheap checks first, then checks
// the MIME structure and runs mailparser in a worker that a timeout can kill, and always answers
// with a value, never a throw.

import { Buffer } from "node:buffer";
import { simpleParser } from "mailparser";
import { convert as convertHtmlToText } from "html-to-text";

export interface MailAddress {
  email: string;
  name: string;
}

export interface ParsedAttachment {
  /** Sanitized: last path segment only, no control characters, at most 255 UTF-8 bytes. */
  filename: string;
  /** Lowercase `type/subtype`; `application/octet-stream` when missing or malformed. */
  contentType: string;
  /** Decoded size in bytes (= content.length). */
  size: number;
  content: Uint8Array;
}

export interface ParsedEmail {
  /** The Message-ID header, or `<generated-<uuid>@local>` when the mail has none. */
  messageId: string;
  /** First address of From; empty strings when there is none. */
  from: MailAddress;
  to: MailAddress[];
  cc: MailAddress[];
  subject: string;
  text: string;
  html: string;
  /** Top-level header lines in order, raw values (unfolded, encoded words kept), bounded. */
  headers: [string, string][];
  attachments: ParsedAttachment[];
  /** True when text, html, subject, recipients or attachments were cut to their limits. */
  truncated: boolean;
}

export type ParseOutcome = { ok: true; email: ParsedEmail } | { ok: false; reason: string };

export interface ParseEmailOptions {
  /** Attachments kept, in message order; the rest are dropped and `truncated` set. Default 50. */
  maxAttachments?: number;
  /** Source of the id given to mail without a Message-ID (injected so tests can fix it). */
  generateMessageId?: () => string;
}

export interface ParseEmailSafelyOptions extends ParseEmailOptions {
  /** Wall time allowed for parsing, worker start included. Default 10,000 ms. */
  timeoutMs?: number;
}

/** Every bound this module enforces. */
export const EMAIL_PARSE_LIMITS = {
  /** Backstop above any SMTP size limit we would configure (contract: 10 MB, notes: 25 MiB). */
  maxMessageBytes: 32 * 1024 * 1024,
  /** Top-level header block; mailparser's own per-part limit is the same 1 MiB. */
  maxHeaderBytes: 1024 * 1024,
  /** Top-level header fields (a folded field counts once). mailparser copes with 20,000 in ~80 ms,
   * but no real mail comes near 10,000; 5,000 are accepted and the kept list is bounded. */
  maxHeaderLines: 10_000,
  /** Multipart and message/rfc822 levels. mailparser copes with 500 (44 ms) and stops at 1,000
   * parts, but real mail rarely passes 10 and deeper trees only burden whoever walks them next. */
  maxMimeDepth: 50,
  /** text and html each, in UTF-8 bytes. */
  maxBodyBytes: 1024 * 1024,
  maxKeptHeaders: 200,
  maxHeaderValueChars: 2000,
  maxSubjectChars: 2000,
  /** RFC 5322 line limit. */
  maxMessageIdChars: 998,
  /** Per list (to, cc). */
  maxAddresses: 1000,
  maxFilenameBytes: 255,
  defaultMaxAttachments: 50,
  /** mailparser refuses more than 1,000 MIME parts anyway. */
  maxAttachmentsCeiling: 1000,
  defaultTimeoutMs: 10_000,
  maxTimeoutMs: 600_000,
  /** Parser workers alive at once; each is a V8 isolate holding a copy of the message. */
  maxConcurrentParses: 4,
  maxWaitingParses: 100,
  /** html-to-text recursion depth, so deeply nested HTML cannot overflow the stack. */
  maxHtmlDepth: 256,
} as const;

const MAX_BODY_BYTES = EMAIL_PARSE_LIMITS.maxBodyBytes;

/** A message refused by a limit, or one mailparser could not read. */
export class EmailParseError extends Error {
  override name = "EmailParseError";
}

/**
 * Parses in the calling thread, without a timeout, and throws `EmailParseError` when the message is
 * refused. For bytes from the network use `parseEmailSafely`, which cannot hang or crash the caller.
 */
export async function parseEmail(raw: Uint8Array, options: ParseEmailOptions = {}): Promise<ParsedEmail> {
  const settings = parseSettings(options);
  const refusal = refusalBeforeParsing(raw);
  if (refusal) throw new EmailParseError(refusal);
  return await parseBoundedEmail(raw, settings.maxAttachments, settings.generateMessageId);
}

/** Parses untrusted bytes: never throws, never takes longer than the timeout (plus a slot wait). */
export async function parseEmailSafely(
  raw: Uint8Array,
  options: ParseEmailSafelyOptions = {},
): Promise<ParseOutcome> {
  try {
    const settings = parseSettings(options);
    if (!(raw instanceof Uint8Array)) return { ok: false, reason: "Invalid message: expected a Uint8Array" };
    const refusal = refusalBeforeParsing(raw);
    if (refusal) return { ok: false, reason: refusal };
    const request: WorkerRequest = {
      raw,
      maxAttachments: settings.maxAttachments,
      generatedMessageId: settings.generateMessageId(),
    };
    return await withParseSlot(() => parseInWorker(request, settings.timeoutMs));
  } catch (error) {
    return { ok: false, reason: reasonFor(error) };
  }
}

// ---------------------------------------------------------------------------------------------
// Options

interface ParseSettings {
  maxAttachments: number;
  timeoutMs: number;
  generateMessageId: () => string;
}

function generateMessageId(): string {
  return `<generated-${crypto.randomUUID()}@local>`;
}

function parseSettings(options: ParseEmailSafelyOptions): ParseSettings {
  const limits = EMAIL_PARSE_LIMITS;
  const maxAttachments = options.maxAttachments ?? limits.defaultMaxAttachments;
  if (
    !Number.isInteger(maxAttachments) || maxAttachments < 0 || maxAttachments > limits.maxAttachmentsCeiling
  ) {
    throw new EmailParseError(
      `Invalid maxAttachments "${maxAttachments}": must be an integer 0 to ${limits.maxAttachmentsCeiling}`,
    );
  }
  const timeoutMs = options.timeoutMs ?? limits.defaultTimeoutMs;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > limits.maxTimeoutMs) {
    throw new EmailParseError(
      `Invalid timeoutMs "${timeoutMs}": must be an integer 1 to ${limits.maxTimeoutMs}`,
    );
  }
  return { maxAttachments, timeoutMs, generateMessageId: options.generateMessageId ?? generateMessageId };
}

function reasonFor(error: unknown): string {
  if (error instanceof EmailParseError) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return `Cannot parse message: ${cutChars(message, 500).text}`;
}

// ---------------------------------------------------------------------------------------------
// Pre-checks: scans over the bytes, so hostile shapes are refused before mailparser sees them.
// Those on the caller's thread read at most the 1 MiB header block; the MIME structure scan is
// linear in the message (~0.3 s for 30 MB of "--" lines), so it runs in the worker.

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;

/** The reason to refuse `raw` on size and headers alone, or undefined. */
function refusalBeforeParsing(raw: Uint8Array): string | undefined {
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
function mimeDepthExceeds(raw: Uint8Array, limit: number): boolean {
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

// ---------------------------------------------------------------------------------------------
// Worker: mailparser and html-to-text run in their own isolate (~100 ms to start one). A timeout
// can terminate it even in the middle of synchronous work (90,000 nested <div>s keep html-to-text
// busy for 1.5 to 2.5 s), and an error thrown from a stream callback ends the worker, not the
// service.

const PARSE_WORKER_NAME = "email-parse-worker";

interface WorkerRequest {
  raw: Uint8Array;
  maxAttachments: number;
  generatedMessageId: string;
}

let activeParses = 0;
const waitingParses: (() => void)[] = [];

/** Runs `work` when fewer than maxConcurrentParses are running; a freed slot passes to the next waiter. */
async function withParseSlot(work: () => Promise<ParseOutcome>): Promise<ParseOutcome> {
  const limits = EMAIL_PARSE_LIMITS;
  if (activeParses < limits.maxConcurrentParses) {
    activeParses++;
  } else if (waitingParses.length >= limits.maxWaitingParses) {
    return { ok: false, reason: `Parser busy: ${waitingParses.length} messages already waiting` };
  } else {
    await new Promise<void>((resolve) => waitingParses.push(resolve));
  }
  try {
    return await work();
  } finally {
    const next = waitingParses.shift();
    if (next) next();
    else activeParses--;
  }
}

function parseInWorker(request: WorkerRequest, timeoutMs: number): Promise<ParseOutcome> {
  return new Promise((resolve) => {
    const worker = new Worker(import.meta.url, { type: "module", name: PARSE_WORKER_NAME });
    let settled = false;
    const finish = (outcome: ParseOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      worker.terminate();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => finish({ ok: false, reason: `Parse timed out after ${timeoutMs} ms` }),
      timeoutMs,
    );
    worker.onmessage = (event: MessageEvent<ParseOutcome>) => finish(event.data);
    worker.onmessageerror = () =>
      finish({ ok: false, reason: "Cannot parse message: unreadable worker result" });
    worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      finish({ ok: false, reason: `Parser crashed: ${cutChars(String(event.message), 500).text}` });
    };
    worker.postMessage(request);
  });
}

function isParseWorker(): boolean {
  return "WorkerGlobalScope" in globalThis && (globalThis as { name?: unknown }).name === PARSE_WORKER_NAME;
}

interface WorkerScope {
  onmessage: ((event: MessageEvent<WorkerRequest>) => void) | null;
  postMessage(message: ParseOutcome, transfer: Transferable[]): void;
}

function serveParseRequests(): void {
  const scope = globalThis as unknown as WorkerScope;
  scope.onmessage = async (event) => {
    const { raw, maxAttachments, generatedMessageId } = event.data;
    let outcome: ParseOutcome;
    try {
      outcome = { ok: true, email: await parseBoundedEmail(raw, maxAttachments, () => generatedMessageId) };
    } catch (error) {
      outcome = { ok: false, reason: reasonFor(error) };
    }
    // Each attachment owns its buffer (see toAttachments), so they can move without a copy.
    const transfer = outcome.ok ? outcome.email.attachments.map((a) => a.content.buffer as ArrayBuffer) : [];
    scope.postMessage(outcome, transfer);
  };
}

// ---------------------------------------------------------------------------------------------
// mailparser -> ParsedEmail

/** The parts of mailparser's result used here (the package ships no types). */
interface MailparserAddress {
  address?: string;
  name?: string;
  group?: MailparserAddress[];
}

interface MailparserAddressObject {
  value?: MailparserAddress[];
}

interface MailparserAttachment {
  filename?: string;
  contentType?: string;
  content?: unknown;
}

interface MailparserMail {
  messageId?: string;
  subject?: string;
  from?: MailparserAddressObject | MailparserAddressObject[];
  to?: MailparserAddressObject | MailparserAddressObject[];
  cc?: MailparserAddressObject | MailparserAddressObject[];
  text?: string;
  html?: string | false;
  headerLines?: { key: string; line: string }[];
  attachments?: MailparserAttachment[];
}

// The body conversions mailparser offers are skipped: text from HTML is made here with our own
// bounds, and cid: links stay as they are instead of inlining every image as a data: URL.
const MAILPARSER_OPTIONS = {
  skipHtmlToText: true,
  skipTextToHtml: true,
  skipTextLinks: true,
  skipImageLinks: true,
  keepCidLinks: true,
};

/** Records whether anything forwarded had to be cut. */
interface CutTracker {
  truncated: boolean;
}

/** Parses a message that passed `refusalBeforeParsing`; throws EmailParseError on deep nesting. */
async function parseBoundedEmail(
  raw: Uint8Array,
  maxAttachments: number,
  generateId: () => string,
): Promise<ParsedEmail> {
  const maxDepth = EMAIL_PARSE_LIMITS.maxMimeDepth;
  if (mimeDepthExceeds(raw, maxDepth)) {
    throw new EmailParseError(`MIME nesting too deep: more than ${maxDepth} levels`);
  }
  const mail: MailparserMail = await simpleParser(
    Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength),
    MAILPARSER_OPTIONS,
  );
  const cuts: CutTracker = { truncated: false };
  const html = keep(cuts, cutUtf8(withoutNul(stringOr(mail.html)), MAX_BODY_BYTES));
  // mailparser turns CRLF into LF but passes bare CRs through; consumers get one line ending.
  let text = withoutNul(stringOr(mail.text)).replace(/\r\n?/g, "\n");
  // Mail with only HTML still gets a readable text body, as Mailgun's body-plain does.
  if (text.trim() === "" && html !== "") text = textFromHtml(html);
  return {
    messageId: messageIdOf(cuts, stringOr(mail.messageId), generateId),
    from: toAddresses(mail.from, 1).list[0] ?? { email: "", name: "" },
    to: addressList(cuts, mail.to),
    cc: addressList(cuts, mail.cc),
    subject: keep(cuts, cutChars(withoutNul(stringOr(mail.subject)), EMAIL_PARSE_LIMITS.maxSubjectChars)),
    text: keep(cuts, cutUtf8(text, MAX_BODY_BYTES)),
    html,
    headers: toHeaders(mail.headerLines ?? []),
    attachments: toAttachments(cuts, mail.attachments ?? [], maxAttachments),
    truncated: cuts.truncated,
  };
}

function stringOr(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function keep(cuts: CutTracker, result: { text: string; cut: boolean }): string {
  if (result.cut) cuts.truncated = true;
  return result.text;
}

/** Text of the (already capped) HTML; script, style and head contents never reach it. */
function textFromHtml(html: string): string {
  try {
    return convertHtmlToText(html, {
      wordwrap: false,
      limits: { maxInputLength: MAX_BODY_BYTES, maxDepth: EMAIL_PARSE_LIMITS.maxHtmlDepth },
      // Headings keep the author's case instead of html-to-text's default upper case.
      selectors: ["h1", "h2", "h3", "h4", "h5", "h6"].map((selector) => ({
        selector,
        options: { uppercase: false },
      })),
    });
  } catch {
    // A document html-to-text cannot walk still has its html; an empty text is the honest answer.
    return "";
  }
}

function messageIdOf(cuts: CutTracker, value: string, generateId: () => string): string {
  const id = value.replace(/[\0\r\n]/g, "").trim();
  if (id === "" || id === "<>") return generateId();
  return keep(cuts, cutChars(id, EMAIL_PARSE_LIMITS.maxMessageIdChars));
}

function addressList(
  cuts: CutTracker,
  value: MailparserAddressObject | MailparserAddressObject[] | undefined,
): MailAddress[] {
  const { list, cut } = toAddresses(value, EMAIL_PARSE_LIMITS.maxAddresses);
  if (cut) cuts.truncated = true;
  return list;
}

/** Addresses of one or more (repeated) headers, groups flattened, entries without an address dropped. */
function toAddresses(
  value: MailparserAddressObject | MailparserAddressObject[] | undefined,
  max: number,
): { list: MailAddress[]; cut: boolean } {
  const list: MailAddress[] = [];
  const pending = (Array.isArray(value) ? value : value ? [value] : []).flatMap((header) =>
    header.value ?? []
  );
  for (const entry of pending) {
    const members = entry.group ?? [entry];
    for (const member of members) {
      const email = String(member.address ?? "").replace(/[\s\p{Cc}]/gu, "");
      if (email === "") continue;
      if (list.length >= max) return { list, cut: true };
      list.push({
        email,
        name: String(member.name ?? "").replace(/[\r\n\t]+/g, " ").replace(/\0/g, "").trim(),
      });
    }
  }
  return { list, cut: false };
}

/** Top-level header lines as `[name, value]`; values keep encoded words, 8-bit bytes read as UTF-8. */
function toHeaders(lines: { line: string }[]): [string, string][] {
  const limits = EMAIL_PARSE_LIMITS;
  const headers: [string, string][] = [];
  for (const { line } of lines.slice(0, limits.maxKeptHeaders)) {
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    // Unfold before cutting; 4 bytes per character is enough input for maxHeaderValueChars.
    const value = colon === -1 ? "" : line.slice(colon + 1, colon + 1 + limits.maxHeaderValueChars * 4 + 64);
    headers.push([
      headerText(name, limits.maxHeaderValueChars),
      headerText(value.replace(/\r?\n(?=[ \t])/g, ""), limits.maxHeaderValueChars),
    ]);
  }
  return headers;
}

/** A header string from mailsplit's binary ("latin1") form, one line, without NUL. */
function headerText(binary: string, maxChars: number): string {
  const decoded = Buffer.from(binary, "latin1").toString("utf8");
  return cutChars(decoded.replace(/[\0\r\n]/g, "").trim(), maxChars).text;
}

function toAttachments(
  cuts: CutTracker,
  attachments: MailparserAttachment[],
  maxAttachments: number,
): ParsedAttachment[] {
  if (attachments.length > maxAttachments) cuts.truncated = true;
  return attachments.slice(0, maxAttachments).map((attachment, index) => {
    // A copy with its own buffer: safe to transfer out of the worker, and no view into a shared pool.
    const content = attachment.content instanceof Uint8Array
      ? new Uint8Array(attachment.content)
      : new Uint8Array();
    return {
      filename: sanitizeFilename(attachment.filename, index + 1),
      contentType: normalizeContentType(attachment.contentType),
      size: content.length,
      content,
    };
  });
}

// Bidirectional overrides let "evil\u202Egpj.exe" display as "evilexe.jpg".
const UNSAFE_FILENAME_CHARS = /[\p{Cc}\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/** A name safe to show and to store under: path info stripped as RFC 6266 asks of browsers. */
export function sanitizeFilename(name: string | undefined, position: number): string {
  const segments = String(name ?? "").split(/[\\/]/).filter((segment) => segment !== "");
  const cleaned = (segments.at(-1) ?? "").replace(UNSAFE_FILENAME_CHARS, "").trim();
  if (cleaned === "" || /^\.+$/.test(cleaned)) return `attachment-${position}`;
  const maxBytes = EMAIL_PARSE_LIMITS.maxFilenameBytes;
  if (utf8Length(cleaned) <= maxBytes) return cleaned;
  // Keep a short extension so a cut name still opens with the right program.
  const extension = /\.[^.\s]{1,16}$/.exec(cleaned)?.[0] ?? "";
  const stem =
    cutUtf8(cleaned.slice(0, cleaned.length - extension.length), maxBytes - utf8Length(extension)).text;
  return stem + extension;
}

const CONTENT_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

function normalizeContentType(value: string | undefined): string {
  const type = String(value ?? "").trim().toLowerCase();
  return CONTENT_TYPE.test(type) ? type : "application/octet-stream";
}

// ---------------------------------------------------------------------------------------------
// String bounds

function withoutNul(text: string): string {
  // PostgreSQL text cannot hold U+0000, and no mail body needs it.
  return text.includes("\0") ? text.replaceAll("\0", "") : text;
}

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** At most `maxBytes` of UTF-8, cut between characters. */
function cutUtf8(text: string, maxBytes: number): { text: string; cut: boolean } {
  if (text.length * 3 <= maxBytes) return { text, cut: false };
  // encodeInto stops before a character that does not fit, so `read` is a safe cut point.
  const { read } = new TextEncoder().encodeInto(text, new Uint8Array(maxBytes));
  return read < text.length ? { text: text.slice(0, read), cut: true } : { text, cut: false };
}

/** At most `maxChars` UTF-16 units, never splitting a surrogate pair. */
function cutChars(text: string, maxChars: number): { text: string; cut: boolean } {
  if (text.length <= maxChars) return { text, cut: false };
  let end = maxChars;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return { text: text.slice(0, end), cut: true };
}

// Last, once every constant above is initialized. Only in the dedicated worker that
// parseInWorker starts: importing this module anywhere else has no effect.
if (isParseWorker()) serveParseRequests();
