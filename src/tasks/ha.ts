// `deno task ha`: pg_auto_failover's layout on spare ports (a monitor, a primary and its synchronous
// standby, each node kept by its pg_autoctl agent; src/tasks/ha/layout.ts), two service instances
// on the two-host DATABASE_URL behind HAProxy, a KV load from a fixed set of wallets, a schedule
// that fires every minute and a mail a second, and these rounds, HA_ROUNDS of each (default 1):
// kill -9 of the primary's postmaster; the primary's node lost (its agent too) and brought back; a
// planned switchover; the standby lost and brought back. Per round: writes acknowledged and lost,
// seconds without service, 5xx other than 503, cron minutes run and doubled, mails delivered and
// doubled, audit and replay on the primary. Removes everything afterwards; the last line is one JSON
// object; exit 1 if anything acknowledged was lost, doubled or unclean. Needs Debian's
// postgresql-15-auto-failover, pg-auto-failover-cli and haproxy (installed when missing).
import { describeMachine, freePort } from "./bench/system.ts";
import { PAYMENT_SECRET } from "./bench/service.ts";
import { type Haproxy, startHaproxy } from "./cluster/haproxy.ts";
import { CLUSTER_MASTER_KEY, type Instance, startInstances } from "./cluster/instances.ts";
import { type HttpsReceiver, startHttpsReceiver } from "./cluster/receiver.ts";
import { fundedWallets } from "./chaos/wallets.ts";
import { ensureHaTools } from "./ha/tools.ts";
import { createHaLayout, type HaLayout } from "./ha/layout.ts";
import { MONITOR_SETTINGS } from "./ha/settings.ts";
import { ROUND_KINDS, type RoundFigures, runRound } from "./ha/rounds.ts";
import { startTraffic, type Traffic } from "./ha/traffic.ts";

const INSTANCES = 2;
const CLIENTS = 8;
/** After the last round: time for the last cron minute and mails to arrive. */
const DRAIN_MS = 15_000;
/** The whole run's bound: past it the task stops, cleans up and fails. */
const RUN_BOUND_MS = 40 * 60_000;

const rounds = Number(Deno.env.get("HA_ROUNDS") ?? "1");
if (!Number.isInteger(rounds) || rounds < 1 || rounds > 20) {
  console.error("HA_ROUNDS must be a whole number from 1 to 20");
  Deno.exit(2);
}

let layout: HaLayout | undefined;
let haproxy: Haproxy | undefined;
let receiver: HttpsReceiver | undefined;
let traffic: Traffic | undefined;
let instances: Instance[] = [];
let dir: string | undefined;

function say(line: string) {
  console.log(`ha: ${line}`);
}

async function cleanUp() {
  await traffic?.stop().catch(() => {});
  await haproxy?.stop().catch(() => {});
  await Promise.all(instances.map((i) => i.process.stop().catch(() => {})));
  await receiver?.close().catch(() => {});
  await layout?.drop().catch((error) => console.error(`Cannot remove the layout: ${error}`));
  if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, async () => {
    say(`${signal}, stopping everything and removing the layout`);
    await cleanUp();
    Deno.exit(130);
  });
}

function roundLine(r: RoundFigures & { cron: object; mail: object }): string {
  return `round ${r.round} ${r.kind}: ${r.primaryBefore} -> ${r.primaryAfter}; ${r.acknowledged} writes ` +
    `acknowledged, ${r.lost} lost, ${r.wrongCharges} wrong charges; ${r.secondsWithoutService} s without ` +
    `service (writes ${r.secondsToWrites} s after the fault), ${r.answers503} x 503, ${r.bare503} x 503 without Retry-After, ${r.other5xx} other 5xx ` +
    `${JSON.stringify(r.other5xxByStatus)}, ` +
    `${r.noAnswer} unanswered; cron ${JSON.stringify(r.cron)}; mail ${JSON.stringify(r.mail)}; ` +
    (r.readyzNoticedSeconds === undefined ? "" : `/readyz noticed in ${r.readyzNoticedSeconds} s; `) +
    `audit ${r.audit}, replay ${r.replay}`;
}

async function main() {
  const started = performance.now();
  say(await describeMachine());
  say(await ensureHaTools());
  layout = await createHaLayout(say);
  say(
    `monitor and 2 nodes up in ${Math.round((performance.now() - started) / 1000)} s; ${layout.databaseUrl}`,
  );
  say(`monitor settings: ${JSON.stringify(MONITOR_SETTINGS)}`);
  dir = await Deno.makeTempDir({ prefix: "ha-run-" });
  receiver = await startHttpsReceiver(dir);
  const port = freePort();
  instances = await startInstances(INSTANCES, {
    databaseUrl: layout.databaseUrl,
    publicUrl: `http://127.0.0.1:${port}`,
    trustedCertificate: receiver.certificateFile,
    paymentSecret: PAYMENT_SECRET,
  });
  haproxy = await startHaproxy(port, instances.map((i) => i.httpPort), dir);
  await haproxy.waitFor(instances.map((i) => i.name), (status) => status === "UP");
  say(`${INSTANCES} instances behind HAProxy on ${haproxy.url}`);
  const wallets = await fundedWallets(
    `http://127.0.0.1:${instances[0].httpPort}`,
    CLIENTS + 2,
    PAYMENT_SECRET,
  );
  traffic = await startTraffic(haproxy, { receiver, instances, tokens: wallets.tokens.slice(CLIENTS) });
  const context = {
    layout,
    haproxy,
    instances,
    tokens: wallets.tokens.slice(0, CLIENTS),
    balances: wallets.balances.slice(0, CLIENTS),
    masterKey: CLUSTER_MASTER_KEY,
    traffic,
    say,
  };
  const figures: RoundFigures[] = [];
  for (const kind of ROUND_KINDS) {
    for (let round = 1; round <= rounds; round++) {
      figures.push(await runRound(kind, round, context));
      say(`round ${round} ${kind} done`);
    }
  }
  say(`waiting ${DRAIN_MS / 1000} s for the last deliveries`);
  await new Promise((resolve) => setTimeout(resolve, DRAIN_MS));
  await traffic.stop();
  const reports = figures.map((r) => ({
    ...r,
    cron: traffic!.cron(r.from, r.to),
    mail: traffic!.mail(r.from, r.to),
  }));
  for (const r of reports) console.log(roundLine(r));
  const crashes = instances.reduce((sum, i) => sum + i.process.crashes, 0);
  const byKind = Object.fromEntries(ROUND_KINDS.map((kind) => {
    const mine = reports.filter((r) => r.kind === kind);
    const max = (pick: (r: typeof reports[number]) => number) => Math.max(0, ...mine.map(pick));
    return [kind, {
      rounds: mine.length,
      acknowledged: mine.reduce((s, r) => s + r.acknowledged, 0),
      lost: mine.reduce((s, r) => s + r.lost, 0),
      maxSecondsWithoutService: max((r) => r.secondsWithoutService),
      maxSecondsToWrites: max((r) => r.secondsToWrites),
      other5xx: mine.reduce((s, r) => s + r.other5xx, 0),
      bare503: mine.reduce((s, r) => s + r.bare503, 0),
      cronDoubled: mine.reduce((s, r) => s + r.cron.doubled, 0),
      cronMissed: mine.reduce((s, r) => s + r.cron.missed, 0),
      mailDoubled: mine.reduce((s, r) => s + r.mail.doubled, 0),
      mailRedelivered: mine.reduce((s, r) => s + r.mail.redelivered, 0),
      mailMissing: mine.reduce((s, r) => s + r.mail.missing, 0),
      auditReplayClean: mine.every((r) => r.audit === "clean" && r.replay === "clean"),
    }];
  }));
  const ok = crashes === 0 &&
    Object.values(byKind).every((k) =>
      k.lost === 0 && k.other5xx === 0 && k.bare503 === 0 && k.cronDoubled === 0 && k.cronMissed === 0 &&
      k.mailDoubled === 0 &&
      k.mailMissing === 0 && k.auditReplayClean
    ) && reports.every((r) => r.wrongCharges === 0);
  await cleanUp();
  const seconds = Math.round((performance.now() - started) / 1000);
  console.log(
    JSON.stringify({ ha: { ok, roundsPerKind: rounds, seconds, crashes, ...byKind, rounds: reports } }),
  );
  return ok;
}

const bound = setTimeout(async () => {
  console.error(`ha: not done within ${RUN_BOUND_MS / 60_000} minutes; stopping`);
  await cleanUp();
  Deno.exit(1);
}, RUN_BOUND_MS);
try {
  const ok = await main();
  clearTimeout(bound);
  Deno.exit(ok ? 0 : 1);
} catch (error) {
  console.error(`ha: ${error instanceof Error ? error.stack : error}`);
  for (const instance of instances) {
    console.error(`${instance.name} output (last lines):\n${instance.process.output().slice(-2000)}`);
  }
  await cleanUp();
  Deno.exit(1);
}
