// HTTP families: requests by route template (Hono's matched route, never the raw path), method and
// status class, their latency by route template, the connections open and refused by the bounds,
// and the refusals an operator watches apart (408, 413, 429, and 402: out of credits).
import { Counter, Gauge, Histogram } from "prom-client";
import { metricsOn, PREFIX, registry, Sources, statusClass } from "./registry.ts";

/** Methods kept as they are; anything else is counted as OTHER. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
/** The statuses counted on their own, besides their class. */
const WATCHED = new Set([402, 408, 413, 429, 431]);

const requests = new Counter({
  name: `${PREFIX}http_requests_total`,
  help: "HTTP requests answered, by route template, method and status class",
  labelNames: ["route", "method", "status_class"],
  registers: [registry],
});
const latency = new Histogram({
  name: `${PREFIX}http_request_duration_seconds`,
  help: "Time from a request's arrival to its answer, by route template",
  labelNames: ["route"],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
const refusals = new Counter({
  name: `${PREFIX}http_refusals_total`,
  help: "Answers 402, 408, 413, 429 and 431, by status (the server's own timeouts included)",
  labelNames: ["status"],
  registers: [registry],
});
for (const status of WATCHED) refusals.labels(String(status)).inc(0);
const refusedConnections = new Counter({
  name: `${PREFIX}http_connections_refused_total`,
  help: "Connections turned away by the bounds, by which bound (total or per address)",
  labelNames: ["bound"],
  registers: [registry],
});

for (const bound of ["total", "per_address"]) refusedConnections.labels(bound).inc(0);

const openConnections = new Sources<number>();
new Gauge({
  name: `${PREFIX}http_connections_open`,
  help: "HTTP connections open now",
  registers: [registry],
  collect() {
    this.set(openConnections.read().reduce((sum, n) => sum + n, 0));
  },
});

/** Route templates times methods times statuses: bounded by the routes the code declares. */
const seriesOf = new Map<string, { count: Counter.Internal; latency: Histogram.Internal<"route"> }>();

export interface AnsweredRequest {
  route: string | undefined;
  method: string;
  status: number;
  seconds: number;
}

/**
 * A request of the app answered. `route` is the matched route's template ("/kv/:bucket/:key"); a
 * request no route matched is counted under "unmatched", so no path a client sends becomes a label.
 */
export function recordRequest(answered: AnsweredRequest): void {
  if (!metricsOn()) return;
  const { status, seconds } = answered;
  const route = answered.route ?? "unmatched";
  const method = METHODS.has(answered.method) ? answered.method : "OTHER";
  // The series of a route are looked up once, not hashed from their labels at every request.
  const key = `${route} ${method} ${status}`;
  let series = seriesOf.get(key);
  if (!series) {
    series = { count: requests.labels(route, method, statusClass(status)), latency: latency.labels(route) };
    seriesOf.set(key, series);
  }
  series.count.inc();
  series.latency.observe(seconds);
  if (WATCHED.has(status)) refusals.labels(String(status)).inc();
}

/** An answer node:http's client-error path wrote itself (408, 413, 431 or 400), outside the app. */
export function recordClientError(status: number): void {
  if (!metricsOn()) return;
  requests.labels("unmatched", "OTHER", statusClass(status)).inc();
  if (WATCHED.has(status)) refusals.labels(String(status)).inc();
}

/** A connection turned away by the gate: "total" or "per_address". */
export function recordRefusedConnection(bound: "total" | "per_address"): void {
  if (metricsOn()) refusedConnections.labels(bound).inc();
}

/** The server's count of open connections, read at scrape time. */
export function watchOpenConnections(read: () => number): () => void {
  return openConnections.add(read);
}
