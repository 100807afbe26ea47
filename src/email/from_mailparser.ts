// mailparser's reading of a message, mapped to a bounded ParsedEmail: bodies, subject and address
// lists cut to their limits, attachment names made safe, every string storable (NUL removed, an
// unpaired surrogate made U+FFFD: charsets such as UTF-16 and UTF-7 decode to them), and HTML whose
// shape would stall its conversion to text refused. Runs in the parse worker (or in the caller's
// thread for parseEmail) on a message the byte pre-checks have passed.

import { Buffer } from "node:buffer";
import { simpleParser } from "mailparser";
import { htmlToText } from "../html_to_text.ts";
import { type Bounded, cutChars, cutUtf8, utf8Length } from "../text_bounds.ts";
import { isStorable } from "../storable_text.ts";
import { measureHtml } from "./html_measure.ts";
import {
  EMAIL_PARSE_LIMITS,
  HTML_BOUNDS,
  type MailAddress,
  type ParsedAttachment,
  type ParsedEmail,
} from "./parsed_email.ts";

const MAX_BODY_BYTES = EMAIL_PARSE_LIMITS.maxBodyBytes;

export interface FromMailparserOptions {
  /** Attachments kept, in message order; the rest are dropped and `truncated` set. */
  maxAttachments: number;
  /** The id given to mail without a Message-ID. */
  generateId: () => string;
}

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

/** Refuses a message whose decoded HTML passes a bound of html_measure.ts; its message is the reason. */
export class HtmlRefused extends Error {
  override name = "HtmlRefused";
}

/** Records whether anything forwarded had to be cut. */
interface CutTracker {
  truncated: boolean;
}

/** The message as a ParsedEmail; throws what mailparser throws on bytes it cannot read. */
export async function fromMailparser(raw: Uint8Array, options: FromMailparserOptions): Promise<ParsedEmail> {
  const mail: MailparserMail = await simpleParser(
    Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength),
    MAILPARSER_OPTIONS,
  );
  const cuts: CutTracker = { truncated: false };
  const html = keep(cuts, cutUtf8(withoutNul(stringOr(mail.html)), MAX_BODY_BYTES));
  // The pre-scan measured the raw parts; this measures what mailparser joined and decoded (other
  // charsets, text parts made HTML), before anything converts it, here or at a delivery.
  const refusal = measureHtml(html, HTML_BOUNDS).refusal;
  if (refusal) throw new HtmlRefused(refusal);
  // mailparser turns CRLF into LF but passes bare CRs through; consumers get one line ending.
  let text = withoutNul(stringOr(mail.text)).replace(/\r\n?/g, "\n");
  // Mail with only HTML still gets a readable text body, as Mailgun's body-plain does.
  if (text.trim() === "" && html !== "") text = htmlToText(html);
  return storableEmail({
    messageId: messageIdOf(cuts, stringOr(mail.messageId), options.generateId),
    from: toAddresses(mail.from, 1).list[0] ?? { email: "", name: "" },
    to: addressList(cuts, mail.to),
    cc: addressList(cuts, mail.cc),
    subject: keep(cuts, cutChars(withoutNul(stringOr(mail.subject)), EMAIL_PARSE_LIMITS.maxSubjectChars)),
    text: keep(cuts, cutUtf8(text, MAX_BODY_BYTES)),
    html,
    headers: toHeaders(mail.headerLines ?? []),
    attachments: toAttachments(cuts, mail.attachments ?? [], options.maxAttachments),
    truncated: cuts.truncated,
  });
}

/** Text Postgres can store in text and jsonb: NUL removed, an unpaired surrogate made U+FFFD. */
function storable(text: string): string {
  return isStorable(text) ? text : text.replaceAll("\0", "").toWellFormed();
}

function storableAddress(address: MailAddress): MailAddress {
  return { email: storable(address.email), name: storable(address.name) };
}

/** Every string of the email storable: each may reach an event, the outbox payload or a table. */
export function storableEmail(email: ParsedEmail): ParsedEmail {
  return {
    ...email,
    messageId: storable(email.messageId),
    from: storableAddress(email.from),
    to: email.to.map(storableAddress),
    cc: email.cc.map(storableAddress),
    subject: storable(email.subject),
    text: storable(email.text),
    html: storable(email.html),
    headers: email.headers.map(([name, value]) => [storable(name), storable(value)]),
    attachments: email.attachments.map((file) => ({
      ...file,
      filename: storable(file.filename),
      contentType: storable(file.contentType),
    })),
  };
}

function stringOr(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function keep(cuts: CutTracker, result: Bounded): string {
  if (result.cut) cuts.truncated = true;
  return result.text;
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

function withoutNul(text: string): string {
  // PostgreSQL text cannot hold U+0000, and no mail body needs it.
  return text.includes("\0") ? text.replaceAll("\0", "") : text;
}
