// The service's structured log: one JSON object per line on stdout (errors on stderr). The request
// log's lines are gathered and written together, at most FLUSH_MS after the first of them or once
// FLUSH_BYTES are waiting: it writes a line per call, and a write per line (a system call, through
// console.log's formatting) cost a billed call more than its own work. Every other line is written at
// once through the console, after the request lines before it, and whatever waits is written when the process ends.

const FLUSH_MS = 10;
const FLUSH_BYTES = 64 * 1024;

const encoder = new TextEncoder();
let waiting: string[] = [];
let waitingChars = 0;
let timer: ReturnType<typeof setTimeout> | undefined;

/** Writes the lines that wait on stdout; a failed write (stdout closed) loses them, never the service. */
export function flushLog(): void {
  clearTimeout(timer);
  timer = undefined;
  if (waiting.length === 0) return;
  const text = waiting.join("\n") + "\n";
  waiting = [];
  waitingChars = 0;
  writeAll(Deno.stdout, text);
}

function writeAll(stream: { writeSync(p: Uint8Array): number }, text: string): void {
  try {
    const bytes = encoder.encode(text);
    let written = 0;
    while (written < bytes.length) written += stream.writeSync(bytes.subarray(written));
  } catch {
    // Nowhere left to write to: a log line is never worth the process.
  }
}

globalThis.addEventListener("unload", flushLog);

export function log(level: "info" | "warn" | "error", message: string, fields: Record<string, unknown> = {}) {
  const line = JSON.stringify({ time: new Date().toISOString(), level, message, ...fields });
  flushLog();
  // Through the console, so a test (or an embedding program) that takes the console sees them too.
  if (level === "error") console.error(line);
  else console.log(line);
}

/** A request log line (an error one is written at once, like any error). */
export function logRequest(level: "info" | "error", fields: Record<string, unknown>) {
  if (level === "error") return log(level, "request", fields);
  const line = JSON.stringify({ time: new Date().toISOString(), level, message: "request", ...fields });
  waiting.push(line);
  waitingChars += line.length + 1;
  if (waitingChars >= FLUSH_BYTES) flushLog();
  else if (timer === undefined) timer = setTimeout(flushLog, FLUSH_MS);
}

/** What an error says, without its stack: log lines stay one short line. */
export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function logError(message: string, error: unknown, fields: Record<string, unknown> = {}) {
  log("error", message, { ...fields, error: describeError(error) });
}
