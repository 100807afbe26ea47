// Credentials never leave in clear (CONTRACT section 6): header values, and options whose names
// look like a credential (routing_key and any name with key, token or secret), read as `***`.
const SENSITIVE_OPTION = /key|token|secret/i;
export const REDACTED = "***";

/** Header values never leave in clear. */
export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(headers).map((name) => [name, REDACTED]));
}

/** Options that look like credentials by their name leave as `***`. */
export function redactOptions(options: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(options).map(([name, value]) => [name, SENSITIVE_OPTION.test(name) ? REDACTED : value]),
  );
}
