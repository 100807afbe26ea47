// The parse worker: each message is parsed in an isolate of its own, started by parse_pool.ts, so a
// timeout can terminate mailparser and html-to-text even in the middle of synchronous work (90,000
// nested <div>s keep html-to-text busy for 1.5 to 2.5 s), and an error thrown from a stream callback
// ends the worker, not the service. Imported anywhere else, it does nothing at load.

import { mimeDepthExceeds } from "./mime_scan.ts";
import { fromMailparser, type FromMailparserOptions, HtmlRefused } from "./from_mailparser.ts";
import { EMAIL_PARSE_LIMITS, type ParseOutcome } from "./parsed_email.ts";
import { cutChars } from "../text_bounds.ts";

/** What the pool posts to a worker: the id for mail without one is drawn before, on the caller's side. */
export interface ParseRequest {
  raw: Uint8Array;
  maxAttachments: number;
  generatedMessageId: string;
}

const MAX_ERROR_CHARS = 500;

/**
 * The work of one parse on a message the byte pre-checks passed: the MIME structure scan, then
 * mailparser. Never throws: a refusal or an unreadable message is a reason.
 */
export async function parsePrechecked(
  raw: Uint8Array,
  options: FromMailparserOptions,
): Promise<ParseOutcome> {
  try {
    const maxDepth = EMAIL_PARSE_LIMITS.maxMimeDepth;
    if (mimeDepthExceeds(raw, maxDepth)) {
      return { ok: false, reason: `MIME nesting too deep: more than ${maxDepth} levels` };
    }
    return { ok: true, email: await fromMailparser(raw, options) };
  } catch (error) {
    return { ok: false, reason: error instanceof HtmlRefused ? error.message : cannotParse(error) };
  }
}

/** The reason given for an error no rule foresaw, bounded because it ends up in logs and events. */
export function cannotParse(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return `Cannot parse message: ${cutChars(message, MAX_ERROR_CHARS).text}`;
}

interface WorkerScope {
  onmessage: ((event: MessageEvent<ParseRequest>) => void) | null;
  postMessage(message: ParseOutcome, transfer: Transferable[]): void;
}

function serveParseRequests(scope: WorkerScope): void {
  scope.onmessage = async (event) => {
    const { raw, maxAttachments, generatedMessageId } = event.data;
    const outcome = await parsePrechecked(raw, { maxAttachments, generateId: () => generatedMessageId });
    // Each attachment owns its buffer (see from_mailparser.ts), so they can move without a copy.
    const transfer = outcome.ok ? outcome.email.attachments.map((a) => a.content.buffer as ArrayBuffer) : [];
    scope.postMessage(outcome, transfer);
  };
}

// Only as the entry module of the worker parse_pool.ts starts.
if (import.meta.main) serveParseRequests(globalThis as unknown as WorkerScope);
