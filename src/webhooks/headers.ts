// The rules for custom headers on webhook calls, shared by the configuration check
// (config/input.ts), which refuses a bad header when it is set, and the POST itself (http_post.ts),
// which never sends one.

/** Headers the HTTP transport owns: the body is always JSON of a known length for the URL's host. */
export const TRANSPORT_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "content-type",
  "content-length",
  "transfer-encoding",
  "connection",
]);

/**
 * Headers the service sets itself on every delivery (lowercase): a custom value would break the
 * request or its signature, so configuration refuses them rather than have them silently dropped.
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  ...TRANSPORT_HEADERS,
  "user-agent",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
]);

/** A header name: an RFC 9110 token. */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A value Node can send: tab, visible ASCII, space and the Latin-1 range (RFC 9110 obs-text). */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
