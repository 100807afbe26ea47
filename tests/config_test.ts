// Configuration comes from the environment; a bad value stops the service with a clear message.
import assert from "node:assert/strict";
import { parseConfig } from "../src/config.ts";

Deno.test("every variable has a default", () => {
  const config = parseConfig({});
  assert.ok(!("error" in config));
  assert.equal(config.port, 8787);
  assert.equal(config.hostname, "0.0.0.0");
  assert.equal(config.dataDir, "./data");
  assert.equal(config.publicUrl, "http://localhost:8787");
  assert.equal(config.mailDomain, "mail.localhost");
  assert.equal(config.smtpPort, 2525);
  assert.equal(config.trustProxy, false);
  assert.equal(config.allowPrivateWebhooks, false);
  assert.equal(config.databaseUrl, undefined);
});

Deno.test("bad values are named with the rule", () => {
  const config = parseConfig({ PORT: "http", TRUST_PROXY: "maybe", DATABASE_URL: "mysql://x" });
  assert.ok("error" in config);
  assert.match(config.error, /^Invalid PORT: /m);
  assert.match(
    config.error,
    /^Invalid TRUST_PROXY: must be one of 0, 1, true, false, on, off \(got "maybe"\)$/m,
  );
  assert.match(config.error, /^Invalid DATABASE_URL: /m);
});

Deno.test("the service exits 1 on a bad value", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "src/main.ts"],
    cwd: new URL("../", import.meta.url).pathname,
    env: { PORT: "99999", SMTP_PORT: "0" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 1);
  assert.match(new TextDecoder().decode(out.stderr), /Configuration error:\nInvalid PORT: /);
});

Deno.test("timeouts and connection bounds: defaults, and a headers timeout within the request's", () => {
  const config = parseConfig({});
  assert.ok(!("error" in config));
  assert.deepEqual(config.http, {
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    idleTimeoutMs: 60_000,
    maxConnections: 4096,
    maxConnectionsPerIp: 256,
  });
  assert.deepEqual(config.smtpLimits, {
    idleTimeoutMs: 300_000,
    maxConnections: 64,
    maxConnectionsPerIp: 16,
    pressureConnections: 48,
    pressureIdleMs: 10_000,
  });
  // The benchmark's 64 connections from one address get through.
  assert.ok(config.http.maxConnectionsPerIp >= 64);
  const bad = parseConfig({ HTTP_HEADERS_TIMEOUT_MS: "40000", HTTP_MAX_CONNECTIONS_PER_IP: "0" });
  assert.ok("error" in bad);
  assert.match(bad.error, /^Invalid HTTP_MAX_CONNECTIONS_PER_IP: must be at least 1$/m);
  const late = parseConfig({ HTTP_HEADERS_TIMEOUT_MS: "40000" });
  assert.ok("error" in late);
  assert.match(late.error, /^Invalid HTTP_HEADERS_TIMEOUT_MS: must be at most HTTP_REQUEST_TIMEOUT_MS/m);
});

Deno.test("the pooler settings need DATABASE_URL and name a known mode", () => {
  const ok = parseConfig({
    DATABASE_URL: "postgres://u@127.0.0.1:6432/db",
    DATABASE_POOLER: "transaction",
    DATABASE_DIRECT_URL: "postgres://u@127.0.0.1:5432/db",
  });
  assert.ok(!("error" in ok));
  assert.equal(ok.databasePooler, "transaction");
  assert.equal(ok.databaseDirectUrl, "postgres://u@127.0.0.1:5432/db");
  const plain = parseConfig({ DATABASE_URL: "postgres://u@127.0.0.1:5432/db" });
  assert.ok(!("error" in plain) && plain.databasePooler === "none");
  const unknown = parseConfig({ DATABASE_URL: "postgres://u@h/db", DATABASE_POOLER: "session" });
  assert.ok("error" in unknown);
  assert.match(unknown.error, /^Invalid DATABASE_POOLER: must be none or transaction \(got "session"\)$/m);
  const embedded = parseConfig({ DATABASE_POOLER: "transaction" });
  assert.ok("error" in embedded);
  assert.match(embedded.error, /^Invalid DATABASE_POOLER: .*need DATABASE_URL/m);
});

Deno.test("DATABASE_URL takes several hosts, as libpq does, and names what is wrong in one", () => {
  const url = "postgres://svc@10.0.0.1:5432,db-b:5433,localhost/credits?target_session_attrs=read-write";
  const config = parseConfig({ DATABASE_URL: url, DATABASE_DIRECT_URL: url });
  assert.ok(!("error" in config), JSON.stringify(config));
  assert.equal(config.databaseUrl, url);
  assert.ok(!("error" in parseConfig({ DATABASE_URL: "postgresql://u:p%40ss@h/db" })));
  assert.ok(!("error" in parseConfig({ DATABASE_URL: "postgres://u@[::1]:5432/db" })));
  const cases: [string, RegExp][] = [
    ["mysql://u@h1,h2/db", /must be a postgres:\/\/ or postgresql:\/\/ URL/],
    ["postgres://u@h1:5432,/db", /host "" must be host or host:port/],
    ["postgres://u@h1:5432,h2:99999/db", /port of "h2:99999" must be 1 to 65535/],
    ["postgres://u@h1:5432,h2:x/db", /host "h2:x" must be host or host:port/],
    ["postgres://u@h1,[::1]:5432/db", /use a name for an IPv6 host in a list/],
    ["postgres://u@h1,h2/db?target_session_attrs=writable", /target_session_attrs must be one of/],
  ];
  for (const [bad, message] of cases) {
    const refused = parseConfig({ DATABASE_URL: bad });
    assert.ok("error" in refused, bad);
    assert.match(refused.error, /^Invalid DATABASE_URL: /m, bad);
    assert.match(refused.error, message, bad);
  }
});
