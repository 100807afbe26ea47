// `deno task bench`: measures billed KV calls through the service against the Postgres ceiling of
// the same work done one transaction per call (pgbench), with and without group commit, on the
// embedded database too, and the audit and replay over a 1,000,000-event ledger.
// Needs PostgreSQL (DATABASE_URL, default the local `test` database), wrk and pgbench; wrk is
// installed from Debian's packages when missing.
import postgres from "postgres";
import { signStripePayload } from "../payments/stripe_signature.ts";
import { migrate } from "../db/migrate.ts";
import type { Sql } from "../db/connect.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const BASE_URL = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";
const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 15);
const CONNECTIONS = 64;
const LEDGER_EVENTS = Number(Deno.env.get("BENCH_LEDGER_EVENTS") ?? 1_000_000);
const PAYMENT_SECRET = "bench-payment-secret";

interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  requests: number;
}

function log(line: string) {
  console.log(line);
}

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed:\n${text}`);
  return text;
}

async function ensureTool(name: string, debianPackage: string) {
  try {
    await run("which", [name]);
  } catch {
    log(`installing ${debianPackage} from Debian's packages`);
    await run("apt-get", ["update", "-qq"]);
    await run("apt-get", ["install", "-y", "-qq", debianPackage], { DEBIAN_FRONTEND: "noninteractive" });
  }
}

async function createDatabase(name: string): Promise<string> {
  const admin = postgres(BASE_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(BASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropDatabase(name: string) {
  const admin = postgres(BASE_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.end();
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

interface Running {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function startService(env: Record<string, string>): Promise<Running> {
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "src/main.ts"],
    cwd: ROOT,
    env: {
      PORT: String(port),
      HOSTNAME: "127.0.0.1",
      SMTP_PORT: "0",
      LOG_REQUESTS: "0",
      PAYMENT_WEBHOOK_SECRET: PAYMENT_SECRET,
      ...env,
    },
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      const res = await fetch(`${url}/healthz`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch { /* starting */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

/** A wallet funded through the payment confirmation, with one key written. */
async function fundedToken(url: string): Promise<string> {
  const token = await (await fetch(`${url}/token`, {
    method: "POST",
    body: new URLSearchParams({ token: "new" }),
  })).text();
  for (let i = 0; i < 2; i++) {
    const body = JSON.stringify({
      id: `evt_bench_${crypto.randomUUID()}`,
      type: "checkout.session.completed",
      data: { object: { client_reference_id: token, payment_status: "paid", metadata: { tier: "3" } } },
    });
    const res = await fetch(`${url}/payments/webhook`, {
      method: "POST",
      body,
      headers: {
        "content-type": "application/json",
        "stripe-signature": await signStripePayload(body, PAYMENT_SECRET, new Date()),
      },
    });
    if (!res.ok) throw new Error(`Funding failed: ${res.status} ${await res.text()}`);
  }
  await (await fetch(`${url}/kv/bench/key`, { method: "POST", headers: { "x-token": token }, body: "value" }))
    .text();
  return token;
}

function parseWrk(text: string): WrkResult {
  const num = (re: RegExp) => Number(text.match(re)?.[1] ?? NaN);
  const ms = (label: string) => {
    const m = text.match(new RegExp(`${label}%\\s+([\\d.]+)(us|ms|s)`));
    if (!m) return NaN;
    const value = Number(m[1]);
    return m[2] === "us" ? value / 1000 : m[2] === "s" ? value * 1000 : value;
  };
  const errors = num(/Non-2xx or 3xx responses: (\d+)/) || 0;
  const socket = text.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/);
  const socketErrors = socket ? socket.slice(1).map(Number).reduce((a, b) => a + b, 0) : 0;
  return {
    requestsPerSecond: num(/Requests\/sec:\s+([\d.]+)/),
    p50Ms: ms("50"),
    p99Ms: ms("99"),
    errors: errors + socketErrors,
    requests: num(/(\d+) requests in/),
  };
}

/** Drives the service with wrk while sampling its memory. */
async function wrk(service: Running, path: string, token: string, method: "GET" | "POST", seconds = SECONDS) {
  let maxRssMb = 0;
  const sampler = setInterval(() => {
    try {
      const status = Deno.readTextFileSync(`/proc/${service.pid}/status`);
      const kb = Number(status.match(/VmRSS:\s+(\d+) kB/)?.[1] ?? 0);
      maxRssMb = Math.max(maxRssMb, kb / 1024);
    } catch { /* gone */ }
  }, 250);
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(script, method === "POST" ? `wrk.method = "POST"\nwrk.body = "value"\n` : "");
  const text = await run("wrk", [
    "-t2",
    `-c${CONNECTIONS}`,
    `-d${seconds}s`,
    "--latency",
    "-s",
    script,
    "-H",
    `X-Token: ${token}`,
    `${service.url}${path}`,
  ]);
  clearInterval(sampler);
  await Deno.remove(script);
  return { ...parseWrk(text), maxRssMb: Math.round(maxRssMb) };
}

/** The same work as a billed call, one transaction per call: debit the hot wallet, append an event. */
async function pgbenchCeiling(seconds = SECONDS): Promise<number> {
  const name = `bench_pgbench_${Date.now()}`;
  const url = await createDatabase(name);
  const sql = postgres(url, { max: 1, onnotice: () => {} }) as unknown as Sql;
  await migrate(sql);
  await sql`insert into wallets values ('pgbench', 1000000000, 0, now(), now(), null)`;
  await sql.end();
  const script = await Deno.makeTempFile({ suffix: ".sql" });
  await Deno.writeTextFile(
    script,
    `BEGIN;
UPDATE wallets SET balance = balance - 1, version = version + 1, last_used_at = now()
  WHERE wallet_id = 'pgbench' AND balance >= 1 RETURNING version AS v \\gset
INSERT INTO events (wallet_id, version, type, data, recorded_at)
  VALUES ('pgbench', :v, 'CallBilled', '{"callId":"x","method":"GET","path":"/kv/bench/key","endpoint":"kv","status":200,"cost":1,"balance":0,"ms":1}', now());
END;
`,
  );
  const text = await run("pgbench", [
    "-n",
    "-c",
    String(CONNECTIONS),
    "-j",
    "2",
    "-T",
    String(seconds),
    "-f",
    script,
    url,
  ]);
  await Deno.remove(script);
  await dropDatabase(name);
  return Number(text.match(/tps = ([\d.]+)/)?.[1] ?? NaN);
}

/** A consistent ledger of `total` events (1000 events per wallet) with its projections, built in SQL. */
async function seedLedger(url: string, total: number) {
  const sql = postgres(url, { max: 1, onnotice: () => {} }) as unknown as Sql;
  await migrate(sql);
  const perWallet = 1000;
  const wallets = Math.max(1, Math.round(total / perWallet));
  await sql.unsafe(`
    insert into events (wallet_id, version, type, data, recorded_at)
    select 'w' || w, v,
      case v when 1 then 'WalletOpened' when 2 then 'CreditsGranted' else 'CallBilled' end,
      case v when 1 then '{}'::jsonb
             when 2 then jsonb_build_object('amount', 1000000, 'balance', 1000000, 'reason', 'bench')
             else jsonb_build_object('callId', 'c' || v, 'method', 'GET', 'path', '/kv/b/k', 'endpoint', 'kv',
                    'status', 200, 'cost', 1, 'balance', 1000000 - (v - 2), 'ms', 1) end,
      now()
    from generate_series(1, ${wallets}) w, generate_series(1, ${perWallet}) v`);
  await sql.unsafe(`
    insert into wallets select 'w' || w, 1000000 - ${perWallet - 2}, ${perWallet}, now(), now(), null
    from generate_series(1, ${wallets}) w`);
  await sql.unsafe(`
    insert into call_logs
    select wallet_id, data->>'callId', version, 'GET', '/kv/b/k', 'kv', 200, null, 1, (data->>'balance')::bigint, 1,
           recorded_at, recorded_at + interval '7 days'
    from events where type = 'CallBilled'`);
  await sql.end();
}

async function timeTask(
  task: string,
  env: Record<string, string>,
): Promise<{ seconds: number; output: string; code: number }> {
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", task],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const output = new TextDecoder().decode(out.stdout).trim();
  return { seconds: (performance.now() - started) / 1000, output, code: out.code };
}

const round = (n: number, d = 0) => Math.round(n * 10 ** d) / 10 ** d;

async function main() {
  await ensureTool("wrk", "wrk");
  await ensureTool("pgbench", "postgresql-contrib");
  const cpu = (await Deno.readTextFile("/proc/cpuinfo")).match(/model name\s*:\s*(.+)/)?.[1] ?? "unknown CPU";
  log(
    `machine: ${navigator.hardwareConcurrency} cores, ${cpu}; ${SECONDS} s per run, ${CONNECTIONS} connections`,
  );

  log("\n-- pgbench: debit + event insert, one transaction per call, hot wallet");
  const ceiling = await pgbenchCeiling();
  log(`pgbench ceiling: ${round(ceiling)} tps`);

  const results: Record<string, WrkResult & { maxRssMb: number }> = {};
  const audits: boolean[] = [];
  for (
    const [label, env] of [["group commit", {}], ["no group commit", { LEDGER_MAX_BATCH: "1" }]] as const
  ) {
    const name = `bench_service_${Date.now()}`;
    const databaseUrl = await createDatabase(name);
    const service = await startService({ DATABASE_URL: databaseUrl, ...env });
    try {
      const token = await fundedToken(service.url);
      log(`\n-- service on Postgres, ${label}`);
      for (const method of ["GET", "POST"] as const) {
        const result = await wrk(service, "/kv/bench/key", token, method);
        results[`${method} ${label}`] = result;
        log(
          `${method} /kv: ${
            round(result.requestsPerSecond)
          } req/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, ` +
            `${result.errors} errors, max RSS ${result.maxRssMb} MB`,
        );
      }
    } finally {
      await service.stop();
    }
    // Every call the load made must add up in the ledger.
    const audit = await timeTask("audit", { DATABASE_URL: databaseUrl, PATH: Deno.env.get("PATH") ?? "" });
    audits.push(audit.code === 0);
    log(`audit after the load: ${audit.code === 0 ? "clean" : "MISMATCH"} (${audit.output.split("\n")[0]})`);
    await dropDatabase(name);
  }

  log("\n-- service on the embedded database");
  const dataDir = await Deno.makeTempDir({ prefix: "bench-embedded-" });
  const embedded = await startService({ DATA_DIR: dataDir });
  try {
    const token = await fundedToken(embedded.url);
    results["GET embedded"] = await wrk(embedded, "/kv/bench/key", token, "GET");
    const r = results["GET embedded"];
    log(
      `GET /kv: ${
        round(r.requestsPerSecond)
      } req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, ${r.errors} errors, ` +
        `max RSS ${r.maxRssMb} MB (PGlite's WebAssembly heap included)`,
    );
  } finally {
    await embedded.stop();
    await Deno.remove(dataDir, { recursive: true });
  }

  log(`\n-- audit and replay over a ${LEDGER_EVENTS}-event ledger`);
  const ledgerDb = `bench_ledger_${Date.now()}`;
  const ledgerUrl = await createDatabase(ledgerDb);
  await seedLedger(ledgerUrl, LEDGER_EVENTS);
  const env = { DATABASE_URL: ledgerUrl, PATH: Deno.env.get("PATH") ?? "" };
  const audit = await timeTask("audit", env);
  log(`audit: ${round(audit.seconds, 2)} s  (${audit.output})`);
  const replay = await timeTask("replay", env);
  log(`replay: ${round(replay.seconds, 2)} s  (${replay.output.split("\n")[0]})`);
  await dropDatabase(ledgerDb);

  const get = results["GET group commit"];
  const before = results["GET no group commit"];
  const summary = {
    cores: navigator.hardwareConcurrency,
    seconds: SECONDS,
    connections: CONNECTIONS,
    pgbench_tps: round(ceiling),
    get_rps: round(get.requestsPerSecond),
    get_p50_ms: get.p50Ms,
    get_p99_ms: get.p99Ms,
    get_errors: get.errors,
    post_rps: round(results["POST group commit"].requestsPerSecond),
    post_p99_ms: results["POST group commit"].p99Ms,
    ratio: round(get.requestsPerSecond / ceiling, 2),
    ratio_without_group_commit: round(before.requestsPerSecond / ceiling, 2),
    get_rps_without_group_commit: round(before.requestsPerSecond),
    embedded_get_rps: round(results["GET embedded"].requestsPerSecond),
    max_rss_mb: Math.max(get.maxRssMb, results["POST group commit"].maxRssMb),
    embedded_max_rss_mb: results["GET embedded"].maxRssMb,
    audit_clean_after_load: audits.every(Boolean),
    ledger_events: LEDGER_EVENTS,
    audit_seconds: round(audit.seconds, 2),
    replay_seconds: round(replay.seconds, 2),
  };
  log(
    `\nGET /kv at ${CONNECTIONS} connections: ${summary.get_rps} req/s vs pgbench ${summary.pgbench_tps} tps: ` +
      `ratio ${summary.ratio} (without group commit ${summary.ratio_without_group_commit})`,
  );
  log(JSON.stringify(summary));
}

if (import.meta.main) await main();
