// Reads a service's /metrics (Prometheus text format) into series: `name{labels}` -> value.
import type { Service } from "./service.ts";

export type Series = Map<string, number>;

/** The metrics port of a service started with METRICS_PORT in its env. */
export function metricsUrl(service: Service): string {
  return `http://127.0.0.1:${service.env.METRICS_PORT}/metrics`;
}

export async function scrape(service: Service, token?: string): Promise<Series> {
  const res = await fetch(
    metricsUrl(service),
    token ? { headers: { authorization: `Bearer ${token}` } } : {},
  );
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text}`);
  return parseExposition(text);
}

export function parseExposition(text: string): Series {
  const series: Series = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    series.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return series;
}

/** The sum of the series of `name` whose labels include every one of `labels`. */
export function valueOf(series: Series, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [key, value] of series) {
    const brace = key.indexOf("{");
    if ((brace < 0 ? key : key.slice(0, brace)) !== name) continue;
    if (Object.entries(labels).every(([k, v]) => key.includes(`${k}="${v}"`))) sum += value;
  }
  return sum;
}
