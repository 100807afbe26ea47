// Runs parses in workers (parse_worker.ts), bounded: at most maxConcurrentParses workers at once and
// maxWaitingParses messages waiting for one, each worker terminated at its deadline. Starting a worker
// costs about 100 ms; each holds a copy of its message.

import { EMAIL_PARSE_LIMITS, type ParseOutcome } from "./parsed_email.ts";
import type { ParseRequest } from "./parse_worker.ts";
import { cutChars } from "../text_bounds.ts";

const WORKER_URL = new URL("./parse_worker.ts", import.meta.url);
const WORKER_NAME = "email-parse-worker";
const MAX_ERROR_CHARS = 500;

let activeParses = 0;
const waitingParses: (() => void)[] = [];

/** Parses `request` in a worker when a slot is free; the timeout counts from the worker's start. */
export function parseInPool(request: ParseRequest, timeoutMs: number): Promise<ParseOutcome> {
  return withParseSlot(() => parseInWorker(request, timeoutMs));
}

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
