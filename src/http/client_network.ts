// Which client an address belongs to for the limits kept per client (token creation, lookups of
// unknown tokens): an IPv6 client holds a whole network (its /64 by default), so each address of it
// is the same client; pure.
import ipaddr from "ipaddr.js";

/** Every loopback address, IPv4's 127.0.0.0/8 and IPv6's ::1, is one client. */
export const LOOPBACK_CLIENT = "127.0.0.0/8";
/** An address that is not one (a proxy's garbage, no socket): all of them are one client. */
export const UNKNOWN_CLIENT = "unknown";
export const DEFAULT_IPV6_PREFIX = 64;

/** `[v6]`, `[v6]:port` and `v4:port` as some proxies write them, down to the bare address. */
function bareAddress(address: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(address);
  if (bracketed) return bracketed[1];
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(address);
  return withPort ? withPort[1] : address;
}

/**
 * The client an address counts as: an IPv4 address itself (an IPv4-mapped IPv6 address too), an
 * IPv6 address's network of `ipv6Prefix` bits (`2001:db8:1:2::/64`), LOOPBACK_CLIENT for any
 * loopback address, UNKNOWN_CLIENT for anything that is not an address. Short, canonical text, so
 * it can key a row: at most 43 characters.
 */
export function clientNetwork(address: string, ipv6Prefix = DEFAULT_IPV6_PREFIX): string {
  const bare = bareAddress(address.trim());
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) {
    const ipv4 = ipaddr.IPv4.parse(bare);
    return ipv4.range() === "loopback" ? LOOPBACK_CLIENT : ipv4.toString();
  }
  if (!ipaddr.IPv6.isValid(bare)) return UNKNOWN_CLIENT;
  const ipv6 = ipaddr.IPv6.parse(bare);
  if (ipv6.isIPv4MappedAddress()) return clientNetwork(ipv6.toIPv4Address().toString(), ipv6Prefix);
  if (ipv6.range() === "loopback") return LOOPBACK_CLIENT;
  // The zone of a link-local address names an interface of this host, not a client: it is dropped.
  const network = ipaddr.IPv6.networkAddressFromCIDR(`${ipv6.toNormalizedString()}/${ipv6Prefix}`);
  return `${network.toRFC5952String()}/${ipv6Prefix}`;
}
