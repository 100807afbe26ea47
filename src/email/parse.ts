// Turns one raw inbound email into what the service stores and forwards (CONTRACT section 9): the
// parser's public face. Input from the network is hostile: `parseEmailSafely` refuses by cheap
// byte checks first (mime_scan.ts, and html_prescan.ts for the HTML's shape), then parses in a
// worker that a timeout can kill (parse_pool.ts, where each sender has a share of the workers), and
// always answers with a value, never a throw.

import { refusalBeforeParsing } from "./mime_scan.ts";
import { htmlRefusalBeforeParsing } from "./html_prescan.ts";
import { parseInPool } from "./parse_pool.ts";
import { cannotParse, parsePrechecked } from "./parse_worker.ts";
import { EMAIL_PARSE_LIMITS, type ParsedEmail, type ParseOutcome } from "./parsed_email.ts";

export {
  EMAIL_PARSE_LIMITS,
  type MailAddress,
  type ParsedAttachment,
  type ParsedEmail,
  type ParseOutcome,
} from "./parsed_email.ts";
export { sanitizeFilename } from "./from_mailparser.ts";

export interface ParseEmailOptions {
  /** Attachments kept, in message order; the rest are dropped and `truncated` set. Default 50. */
  maxAttachments?: number;
  /** Source of the id given to mail without a Message-ID (injected so tests can fix it). */
  generateMessageId?: () => string;
}

export interface ParseEmailSafelyOptions extends ParseEmailOptions {
  /** Wall time allowed for parsing, worker start included. Default 10,000 ms. */
  timeoutMs?: number;
  /**
   * Who sent the message (the SMTP client's address): each sender has a share of the parse workers,
   * so its slow messages wait behind its own. Default "": one sender for every caller without one.
   */
  sender?: string;
}

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
  const refusal = refusalBeforeParsing(raw) ?? htmlRefusalBeforeParsing(raw);
  if (refusal) throw new EmailParseError(refusal);
  const outcome = await parsePrechecked(raw, {
    maxAttachments: settings.maxAttachments,
    generateId: settings.generateMessageId,
  });
  if (!outcome.ok) throw new EmailParseError(outcome.reason);
  return outcome.email;
}

/** Parses untrusted bytes: never throws, never takes longer than the timeout (plus a slot wait). */
export async function parseEmailSafely(
  raw: Uint8Array,
  options: ParseEmailSafelyOptions = {},
): Promise<ParseOutcome> {
  try {
    const settings = parseSettings(options);
    if (!(raw instanceof Uint8Array)) return { ok: false, reason: "Invalid message: expected a Uint8Array" };
    const refusal = refusalBeforeParsing(raw) ?? htmlRefusalBeforeParsing(raw);
    if (refusal) return { ok: false, reason: refusal };
    const request = {
      raw,
      maxAttachments: settings.maxAttachments,
      generatedMessageId: settings.generateMessageId(),
    };
    return await parseInPool(request, { timeoutMs: settings.timeoutMs, sender: options.sender ?? "" });
  } catch (error) {
    return { ok: false, reason: error instanceof EmailParseError ? error.message : cannotParse(error) };
  }
}

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
