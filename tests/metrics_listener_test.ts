// The /metrics listener: off unless METRICS_PORT is set, on loopback by default, never on the
// public port, and on a host that is not loopback only with METRICS_TOKEN, which it then asks for.
import assert from "node:assert/strict";
import { freePort, startService } from "./helpers/service.ts";
import { metricsUrl, scrape, valueOf } from "./helpers/metrics.ts";
import { parseConfig } from "../src/config.ts";

const TOKEN = "metrics-token-0123456789";

Deno.test("metrics listener: off by default, nothing on the public port", async () => {
  const svc = await startService();
  try {
    assert.doesNotMatch(svc.output(), /metrics listening/);
    const res = await fetch(`${svc.url}/metrics`);
    const text = await res.text();
    assert.equal(res.status, 404, text);
    assert.doesNotMatch(text, /credit_api_/);
  } finally {
    await svc.dispose();
  }
});

Deno.test("metrics listener: METRICS_PORT serves the exposition on loopback, the public port still not", async () => {
  const svc = await startService({ env: { METRICS_PORT: String(freePort()) } });
  try {
    assert.match(svc.output(), /metrics listening.*127\.0\.0\.1/);
    const series = await scrape(svc);
    assert.equal(valueOf(series, "credit_api_http_requests_total", { route: "/healthz" }) >= 1, true);
    assert.ok(series.has("process_resident_memory_bytes"), "process metrics");
    assert.ok(series.has("nodejs_eventloop_lag_seconds"), "event-loop lag");
    assert.ok(series.has("nodejs_heap_size_used_bytes"), "heap");
    const other = await fetch(metricsUrl(svc).replace("/metrics", "/other"));
    assert.equal(other.status, 404, await other.text());
    const pub = await fetch(`${svc.url}/metrics`);
    assert.equal(pub.status, 404, await pub.text());
  } finally {
    await svc.dispose();
  }
});

Deno.test("metrics listener: a token is asked as Bearer when set", async () => {
  const svc = await startService({ env: { METRICS_PORT: String(freePort()), METRICS_TOKEN: TOKEN } });
  try {
    const bare = await fetch(metricsUrl(svc));
    assert.equal(bare.status, 401, await bare.text());
    assert.equal(bare.headers.get("www-authenticate"), 'Bearer realm="metrics"');
    const wrong = await fetch(metricsUrl(svc), { headers: { authorization: `Bearer ${TOKEN}x` } });
    assert.equal(wrong.status, 401, await wrong.text());
    assert.ok((await scrape(svc, TOKEN)).size > 0);
  } finally {
    await svc.dispose();
  }
});

Deno.test("metrics config: a host that is not loopback needs METRICS_TOKEN", () => {
  const base = { METRICS_PORT: "9464" };
  const open = parseConfig({ ...base, METRICS_HOST: "0.0.0.0" });
  assert.ok("error" in open);
  assert.match(open.error, /Invalid METRICS_HOST: is not loopback: set METRICS_TOKEN too/);
  const tokened = parseConfig({ ...base, METRICS_HOST: "0.0.0.0", METRICS_TOKEN: TOKEN });
  assert.ok(!("error" in tokened));
  assert.deepEqual(tokened.metrics, { port: 9464, hostname: "0.0.0.0", token: TOKEN });
  for (const loopback of ["127.0.0.1", "::1", "localhost", "127.0.0.2"]) {
    const config = parseConfig({ ...base, METRICS_HOST: loopback });
    assert.ok(!("error" in config), loopback);
  }
  const off = parseConfig({});
  assert.ok(!("error" in off) && off.metrics === undefined, "unset: off");
  const short = parseConfig({ ...base, METRICS_TOKEN: "short" });
  assert.ok("error" in short && /METRICS_TOKEN: must be at least 16 characters/.test(short.error));
});
