// The service's structured log: one JSON object per line on stdout or stderr.

export function log(level: "info" | "warn" | "error", message: string, fields: Record<string, unknown> = {}) {
  const line = JSON.stringify({ time: new Date().toISOString(), level, message, ...fields });
  if (level === "error") console.error(line);
  else console.log(line);
}

/** What an error says, without its stack: log lines stay one short line. */
export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function logError(message: string, error: unknown, fields: Record<string, unknown> = {}) {
  log("error", message, { ...fields, error: describeError(error) });
}
