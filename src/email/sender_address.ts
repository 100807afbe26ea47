// Who a mail client is, for the shares of the SMTP receiver (sessions, parse workers, refusal pacing):
// its IPv4 address, or the /64 of its IPv6 address, since one IPv6 host commonly holds a whole /64.
import ipaddr from "ipaddr.js";
import { clientAddress } from "../net/connection_gate.ts";

export function senderAddress(remoteAddress: string | undefined): string {
  const address = clientAddress(remoteAddress);
  if (!ipaddr.IPv6.isValid(address)) return address;
  const parsed = ipaddr.IPv6.parse(address);
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  return `${parsed.parts.slice(0, 4).map((part) => part.toString(16)).join(":")}::/64`;
}
