// What parsing makes of one inbound email, and every bound it is held to (CONTRACT section 9).
// Types and constants only, so the parser's modules and its callers share them without a cycle.

import { MAX_HTML_DEPTH } from "../html_to_text.ts";

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
  /**
   * The To header's addresses. Not forwarded: the payload's `to` is the mailbox's owner and the
   * mailbox is the SMTP envelope's recipient. Kept, like `headers`, as the parser's bounded view of
   * the message, pinned by the hostile-corpus tests, for payload fields peers send (To, headers as an
   * ordered list: notes/webhooks.md section 2.1) without a second parse.
   */
  to: MailAddress[];
  cc: MailAddress[];
  subject: string;
  text: string;
  html: string;
  /** Top-level header lines in order, raw values (unfolded, encoded words kept), bounded. Not forwarded. */
  headers: [string, string][];
  attachments: ParsedAttachment[];
  /** True when text, html, subject, recipients or attachments were cut to their limits. */
  truncated: boolean;
}

export type ParseOutcome = { ok: true; email: ParsedEmail } | { ok: false; reason: string };

/** Every bound the parser enforces. */
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
  /** Workers one sender (an SMTP client address) holds at once: its other messages wait their turn. */
  maxParsesPerSender: 2,
  maxWaitingParses: 100,
  maxWaitingParsesPerSender: 20,
  /** html-to-text recursion depth, so deeply nested HTML cannot overflow the stack. */
  maxHtmlDepth: MAX_HTML_DEPTH,
  /**
   * HTML elements open at once (html_measure.ts). Its parser's cost grows with the square of the
   * nesting: 60,000 levels take a second, 200,000 more than ten; sloppy real mail (unclosed <font>)
   * stays in the hundreds. Deeper mail is refused before any parser runs.
   */
  maxHtmlNesting: 1000,
  /** HTML elements in the kept body (1 MiB): 100,000 convert to text in about 0.4 s. */
  maxHtmlElements: 100_000,
  /** Text the markup alone makes (rules, line breaks, quote and list prefixes): twice the body bound. */
  maxHtmlMarkupChars: 2 * 1024 * 1024,
  /** Lines starting with "--" the receiving thread looks at for MIME boundaries before it leaves the
   * message's HTML to the parse worker to measure. */
  maxPrescanDelimiterLines: 10_000,
} as const;

/** The bounds of an email's HTML, for html_measure.ts. */
export const HTML_BOUNDS = {
  maxNesting: EMAIL_PARSE_LIMITS.maxHtmlNesting,
  maxElements: EMAIL_PARSE_LIMITS.maxHtmlElements,
  maxMarkupChars: EMAIL_PARSE_LIMITS.maxHtmlMarkupChars,
} as const;
