// `deno task cluster`: three service instances (separate processes, each with its own HTTP and SMTP
// port, run as src/deploy/'s systemd unit and environment file say) on one database of a PostgreSQL
// cluster of its own, behind HAProxy on src/deploy/haproxy.cfg. It shows, each asserted: the token
// limit is global, no overdraft across instances, a cron fires once a minute, mail is delivered and
// charged once, a rolling restart under load fails no request, and the throughput with one and with
// three instances, and the throughput as Debian's Prometheus scraped it (PromQL beside wrk). Needs
// pg_createcluster, haproxy, wrk, openssl and prometheus (Debian's packages, installed when missing);
// about 4 minutes. The last line is every figure as one JSON object; exit 1 if a
// check failed.
import { type BenchCluster, createCluster, ensureClusterTools } from "./bench/cluster.ts";
import { describeMachine, ensureTool, freePort } from "./bench/system.ts";
import { fundWallets, PAYMENT_SECRET } from "./bench/service.ts";
import { timeTask } from "./bench/offline.ts";
import { ensureHaproxy, type Haproxy, startHaproxy } from "./cluster/haproxy.ts";
import { type Instance, startInstances } from "./cluster/instances.ts";
import { type HttpsReceiver, startHttpsReceiver } from "./cluster/receiver.ts";
import { type Check, noOverdraft, tokenLimit } from "./cluster/checks_limits.ts";
import { mailOnce, startCron } from "./cluster/checks_once.ts";
import { throughput } from "./cluster/throughput.ts";
import { rollingRestart } from "./cluster/rolling.ts";
import { promqlFigures, startClusterPrometheus } from "./cluster/promql.ts";
import type { PrometheusServer } from "./prometheus_server.ts";

const INSTANCES = 3;
/** Wallets the throughput load picks from at random; the first 16 take the rolling restart's load. */
const WALLETS = 200;
const ROLLING_CLIENTS = 16;

let cluster: BenchCluster | undefined;
let haproxy: Haproxy | undefined;
let receiver: HttpsReceiver | undefined;
let prometheus: PrometheusServer | undefined;
let instances: Instance[] = [];
let dir: string | undefined;

function say(line: string) {
  console.log(`cluster: ${line}`);
}

async function cleanUp() {
  await haproxy?.stop().catch(() => {});
  await prometheus?.stop().catch(() => {});
  await Promise.all(instances.map((i) => i.process.stop().catch(() => {})));
  await receiver?.close().catch(() => {});
  await cluster?.drop().catch((error) => console.error(`Cannot remove cluster ${cluster?.name}: ${error}`));
  if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, async () => {
    say(`${signal}, stopping everything and removing the cluster`);
    await cleanUp();
    Deno.exit(130);
  });
}

/** Everything the checks run on: tools, database, receiver, instances and HAProxy. */
async function setUp(): Promise<{ databaseUrl: string; haproxy: Haproxy; receiver: HttpsReceiver }> {
  say(`${await describeMachine()}`);
  say(`${await ensureHaproxy()}`);
  await ensureTool("wrk", "wrk");
  await ensureTool("openssl", "openssl");
  await ensureClusterTools();
  cluster = await createCluster({ profile: false });
  const databaseUrl = await cluster.createDatabase("cluster");
  dir = await Deno.makeTempDir({ prefix: "cluster-" });
  receiver = await startHttpsReceiver(dir);
  const port = freePort();
  instances = await startInstances(INSTANCES, {
    databaseUrl,
    publicUrl: `http://127.0.0.1:${port}`,
    trustedCertificate: receiver.certificateFile,
    paymentSecret: PAYMENT_SECRET,
  });
  say(
    `${INSTANCES} instances: ` +
      instances.map((i) => `${i.name} HTTP ${i.httpPort} SMTP ${i.smtpPort}`).join(", "),
  );
  haproxy = await startHaproxy(port, instances.map((i) => i.httpPort), dir);
  await haproxy.waitFor(instances.map((i) => i.name), (status) => status === "UP");
  say(`HAProxy on ${haproxy.url}, every instance UP on /readyz; HTTPS receiver on ${receiver.url}`);
  prometheus = await startClusterPrometheus(instances);
  say(
    `Prometheus on ${prometheus.url} scraping ${instances.map((i) => i.metricsPort).join(", ")} every second`,
  );
  return { databaseUrl, haproxy, receiver };
}

async function fundedTokensFile(): Promise<{ tokens: string[]; file: string }> {
  const tokens = await fundWallets(`http://127.0.0.1:${instances[0].httpPort}`, WALLETS);
  const file = `${dir}/tokens`;
  await Deno.writeTextFile(file, tokens.join("\n") + "\n");
  say(`funded ${WALLETS} wallets for the loads`);
  return { tokens, file };
}

async function runChecks(): Promise<Record<string, Check<unknown>>> {
  const { databaseUrl, haproxy, receiver } = await setUp();
  const checks: Record<string, Check<unknown>> = {};
  const record = (name: string, check: Check<unknown>) => {
    checks[name] = check;
    console.log(`${check.ok ? "PASS" : "FAIL"} ${check.line}`);
  };
  // First through the balancer: no POST /token from this address yet.
  record("tokenLimit", await tokenLimit(haproxy));
  const direct = `http://127.0.0.1:${instances[0].httpPort}`;
  const cron = await startCron(haproxy, receiver, direct);
  say(`cron "* * * * *" made; its minutes: ${cron.planned.map((p) => new Date(p).toISOString()).join(", ")}`);
  record("noOverdraft", await noOverdraft(haproxy, direct));
  record("mailOnce", await mailOnce(haproxy, receiver, instances));
  const { tokens, file } = await fundedTokensFile();
  const measured = await throughput(haproxy, instances, {
    tokensFile: file,
    postmasterPid: cluster!.postmasterPid,
  });
  record("throughput", measured);
  record("promql", await promqlFigures(prometheus!, [measured.figures.one, measured.figures.all]));
  say(`rolling restart: SIGTERM to one instance at a time under load`);
  record("rollingRestart", await rollingRestart(haproxy, instances, tokens.slice(0, ROLLING_CLIENTS)));
  say(`waiting for the last planned minute of the cron`);
  record("cronOnce", await cron.finish());
  const crashes = instances.reduce((sum, i) => sum + i.process.crashes, 0);
  const audit = await timeTask("audit", databaseUrl, 0);
  record("clean", {
    ok: crashes === 0 && audit.clean,
    line: `${crashes} instance crashes; audit ${audit.clean ? "clean" : "MISMATCH"} (${audit.firstLine})`,
    figures: { crashes, auditClean: audit.clean },
  });
  return checks;
}

try {
  const started = performance.now();
  const checks = await runChecks();
  const ok = Object.values(checks).every((c) => c.ok);
  const figures = Object.fromEntries(
    Object.entries(checks).map(([name, c]) => [name, { ok: c.ok, ...c.figures as object }]),
  );
  await cleanUp();
  const seconds = Math.round((performance.now() - started) / 1000);
  console.log(JSON.stringify({ cluster: { instances: INSTANCES, ok, seconds, ...figures } }));
  Deno.exit(ok ? 0 : 1);
} catch (error) {
  console.error(`cluster: ${error instanceof Error ? error.stack : error}`);
  for (const instance of instances) {
    console.error(`${instance.name} output (last lines):\n${instance.process.output().slice(-2000)}`);
  }
  await cleanUp();
  Deno.exit(1);
}
