// Counts open connections in total and per client address, so one client cannot hold them all.
// Shared by the HTTP server and the SMTP receiver; each decides how to turn a client away.

export interface ConnectionBounds {
  maxConnections: number;
  maxConnectionsPerIp: number;
}

export type Admission = "admitted" | "too many" | "too many from this address";

export interface ConnectionGate {
  /** Counts the connection in when it fits both bounds; a refused one is not counted. */
  admit(ip: string): Admission;
  /** The connection of an admitted `ip` closed. */
  release(ip: string): void;
  readonly open: number;
}

export function connectionGate(bounds: ConnectionBounds): ConnectionGate {
  const perIp = new Map<string, number>();
  let open = 0;
  return {
    admit(ip) {
      if (open >= bounds.maxConnections) return "too many";
      const mine = perIp.get(ip) ?? 0;
      if (mine >= bounds.maxConnectionsPerIp) return "too many from this address";
      perIp.set(ip, mine + 1);
      open++;
      return "admitted";
    },
    release(ip) {
      const mine = perIp.get(ip);
      if (mine === undefined) return;
      if (mine <= 1) perIp.delete(ip);
      else perIp.set(ip, mine - 1);
      open--;
    },
    get open() {
      return open;
    },
  };
}

/** The address as one key: an IPv4 client seen on a dual-stack socket counts as itself. */
export function clientAddress(remoteAddress: string | undefined): string {
  if (!remoteAddress) return "unknown";
  return remoteAddress.startsWith("::ffff:") ? remoteAddress.slice("::ffff:".length) : remoteAddress;
}
