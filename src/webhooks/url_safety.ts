// Configuration-time check of webhook URLs (CONTRACT section 6): https only, no credentials, and a
// host that is a name or a public IP address. Advisory only: DNS can change, so delivery checks again.

import { hasAtMostCodePoints } from "../code_points.ts";
import ipaddr from "ipaddr.js";
import { isIP } from "node:net";

export interface CheckWebhookUrlOptions {
  /** UNSAFE_ALLOW_PRIVATE_WEBHOOKS: also allow `http:` and any host, for local testing only. */
  allowPrivate?: boolean;
}

/**
 * The one error of a delivery whose host does not resolve or resolves only to non-public addresses:
 * the two read the same, so delivery errors are no oracle for the names inside our network.
 */
export const TARGET_NOT_ALLOWED = "target not allowed";

/** Longest URL accepted; a limit on everything we store and send. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

// IPv4-compatible (::a.b.c.d, deprecated) and the rest of ::/8 are "unicast" to ipaddr.js, yet some
// kernels tunnel ::/96 to the embedded IPv4 address, so they are refused outright.
const IPV6_RESERVED_ZERO_PREFIX = ipaddr.parseCIDR("::/8");

// new URL() silently drops tabs and newlines and trims spaces; refuse them so what is stored is
// exactly what gets called.
// deno-lint-ignore no-control-regex
const WHITESPACE_OR_CONTROL = /[\s\x00-\x1f\x7f]/;

/**
 * Returns an error phrase naming the rule the URL breaks, or null when it may be saved.
 * Literal IPs are judged after WHATWG normalization, so `2130706433`, `0x7f000001`, `0177.0.0.1`
 * and `127.1` are all seen as `127.0.0.1`.
 */
export function checkWebhookUrl(raw: string, options: CheckWebhookUrlOptions = {}): string | null {
  if (!hasAtMostCodePoints(raw, MAX_WEBHOOK_URL_LENGTH)) {
    return `Invalid url: must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  }
  if (WHITESPACE_OR_CONTROL.test(raw)) return "Invalid url: must not contain spaces or control characters";
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "Invalid url: not an absolute URL";
  }
  const allowPrivate = options.allowPrivate === true;
  if (allowPrivate) {
    if (url.protocol !== "https:" && url.protocol !== "http:") return "Invalid url: must use http or https";
  } else if (url.protocol !== "https:") {
    return "Invalid url: must use https";
  }
  if (url.username !== "" || url.password !== "") {
    return "Invalid url: must not contain a user name or password";
  }
  if (allowPrivate) return null;
  return checkHost(url.hostname);
}

/**
 * True when the address may be called from the service: after un-mapping IPv4-mapped IPv6, only
 * what ipaddr.js calls `unicast` (and not in ::/8). Accepts `[v6]` brackets; anything that is not a
 * plain IP address (including IPv6 with a zone id) is not public.
 */
export function isPublicAddress(ip: string): boolean {
  const bare = stripBrackets(ip);
  const version = isIP(bare);
  if (version === 4) return ipaddr.IPv4.parse(bare).range() === "unicast";
  if (version !== 6 || bare.includes("%")) return false;
  // ipaddr.js reads "::127.0.0.1" as IPv4-mapped; WHATWG serializes it as the real "::7f00:1".
  let address: ipaddr.IPv6;
  try {
    address = ipaddr.IPv6.parse(stripBrackets(new URL(`http://[${bare}]/`).hostname));
  } catch {
    return false;
  }
  if (address.isIPv4MappedAddress()) return address.toIPv4Address().range() === "unicast";
  if (address.match(IPV6_RESERVED_ZERO_PREFIX)) return false;
  return address.range() === "unicast";
}

/** Strips the brackets the URL syntax puts around IPv6 literals. */
export function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

function checkHost(hostname: string): string | null {
  const bare = stripBrackets(hostname);
  if (isIP(bare) !== 0) {
    return isPublicAddress(bare) ? null : `Invalid url: host "${hostname}" is not a public address`;
  }
  const name = hostname.replace(/\.+$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) {
    return `Invalid url: host "${hostname}" is not a public name`;
  }
  return null;
}
