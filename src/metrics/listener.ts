// The /metrics listener: its own port (METRICS_PORT), loopback unless METRICS_HOST says otherwise,
// and on a host that is not loopback only with a METRICS_TOKEN, asked as `Authorization: Bearer`.
// Nothing else is served there, and nothing of it is on the public port.
import { timingSafeEqual } from "node:crypto";
import { registry } from "./registry.ts";
import { isLoopbackHost } from "./loopback.ts";

export { isLoopbackHost };

export interface MetricsListenerOptions {
  port: number;
  hostname: string;
  /** Required as a Bearer token when set; config.ts refuses a non-loopback host without one. */
  token?: string;
}

export interface MetricsListener {
  port: number;
  stop(): Promise<void>;
}

function authorized(request: Request, token: string | undefined): boolean {
  if (token === undefined) return true;
  const presented = new TextEncoder().encode(request.headers.get("authorization") ?? "");
  const expected = new TextEncoder().encode(`Bearer ${token}`);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

const TEXT = { "content-type": "text/plain; charset=utf-8" };

export function startMetricsListener(options: MetricsListenerOptions): Promise<MetricsListener> {
  if (!options.token && !isLoopbackHost(options.hostname)) {
    throw new Error(`Invalid METRICS_HOST "${options.hostname}": not loopback, so METRICS_TOKEN is required`);
  }
  return new Promise((resolve) => {
    const server = Deno.serve({
      port: options.port,
      hostname: options.hostname,
      onListen: (address) => resolve({ port: address.port, stop: () => server.shutdown() }),
    }, async (request) => {
      const path = new URL(request.url).pathname;
      if (path !== "/metrics") return new Response("Not Found", { status: 404, headers: TEXT });
      if (request.method !== "GET" && request.method !== "HEAD") {
        return new Response("Method Not Allowed", { status: 405, headers: { ...TEXT, allow: "GET, HEAD" } });
      }
      if (!authorized(request, options.token)) {
        return new Response("Unauthorized", {
          status: 401,
          headers: { ...TEXT, "www-authenticate": 'Bearer realm="metrics"' },
        });
      }
      const body = await registry.metrics();
      return new Response(request.method === "HEAD" ? null : body, {
        headers: { "content-type": registry.contentType },
      });
    });
  });
}
