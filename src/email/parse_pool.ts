// Runs parses in workers (parse_worker.ts), bounded: at most maxConcurrentParses workers at once,
// each sender at most maxParsesPerSender of them (fair_slots.ts: its other messages wait behind its
// own), maxWaitingParses messages waiting in all, and each worker terminated at its deadline.
// Starting a worker costs about 100 ms; each holds a copy of its message.

import { EMAIL_PARSE_LIMITS, type ParseOutcome } from "./parsed_email.ts";
import type { ParseRequest } from "./parse_worker.ts";
import { FairSlots } from "./fair_slots.ts";
import { cutChars } from "../text_bounds.ts";
import { recordParse, watchParseQueue } from "../metrics/smtp_metrics.ts";

const WORKER_URL = new URL("./parse_worker.ts", import.meta.url);
const WORKER_NAME = "email-parse-worker";
const MAX_ERROR_CHARS = 500;

const parseSlots = new FairSlots({
  slots: EMAIL_PARSE_LIMITS.maxConcurrentParses,
  perSender: EMAIL_PARSE_LIMITS.maxParsesPerSender,
  maxWaiting: EMAIL_PARSE_LIMITS.maxWaitingParses,
  maxWaitingPerSender: EMAIL_PARSE_LIMITS.maxWaitingParsesPerSender,
});
watchParseQueue(() => parseSlots.waiting);

export interface PoolOptions {
  /** Counted from the worker's start. */
  timeoutMs: number;
  /** Whose share of the workers the parse takes. */
  sender: string;
}

/** Parses `request` in a worker once the sender's turn comes; never more than its share at once. */
export async function parseInPool(request: ParseRequest, options: PoolOptions): Promise<ParseOutcome> {
  const slot = await parseSlots.acquire(options.sender);
  // parse.ts words a full queue this way; the SMTP answer to it is a temporary failure.
  if (!slot.ok) return { ok: false, reason: `Parser busy: ${slot.waiting} messages already waiting` };
  const started = performance.now();
  try {
    return await parseInWorker(request, options.timeoutMs);
  } finally {
    recordParse((performance.now() - started) / 1000);
    slot.release();
  }
}

function parseInWorker(request: ParseRequest, timeoutMs: number): Promise<ParseOutcome> {
  return new Promise((resolve) => {
    const worker = new Worker(WORKER_URL, { type: "module", name: WORKER_NAME });
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
      finish({
        ok: false,
        reason: `Parser crashed: ${cutChars(String(event.message), MAX_ERROR_CHARS).text}`,
      });
    };
    worker.postMessage(request);
  });
}
