// `deno task noisy-neighbour`: one tenant must not hurt another (issue 21). On a PostgreSQL 15
// cluster of its own (a spare port, removed at the end, on failure and on Ctrl-C), the service
// runs as the README's command runs it; a victim wallet's steady workload (KV calls, mail to its
// mailbox, deliveries to a local receiver) is measured alone, then beside each attack in turn,
// alone again between every two. Prints each window's figures and verdicts, the permanent-log budget, and one
// JSON line; exit 1 when a target is missed. NOISY_SECONDS (default 10) sets each window's length,
// NOISY_SETTLE_SECONDS (default 1) the pause between, NOISY_ONLY a comma-separated list of attacks.
import { describeMachine } from "./bench/system.ts";
import { fundedWallets } from "./chaos/wallets.ts";
import { type BenchCluster, clusterName, ownCluster, removeCluster } from "./noisy_neighbour/cluster.ts";
import { type NoisyService, startNoisyService } from "./noisy_neighbour/service.ts";
import { LOAD, noisySettings } from "./noisy_neighbour/settings.ts";
import { createMailbox, newWallet, spendAll } from "./noisy_neighbour/api.ts";
import { type DeliveryReceiver, startReceiver } from "./noisy_neighbour/receiver.ts";
import { VictimMailbox } from "./noisy_neighbour/victim_mail.ts";
import { type PhaseRun, runPhase, warmUp } from "./noisy_neighbour/phase.ts";
import {
  attackChecks,
  type Check,
  controlReference,
  type KvReference,
  type PhaseFigures,
  phaseLines,
  summaryLines,
} from "./noisy_neighbour/report.ts";
import { measureLogBudget } from "./noisy_neighbour/log_budget.ts";
import { budgetLines } from "./noisy_neighbour/budget_figures.ts";
import { openSession } from "./noisy_neighbour/smtp_client.ts";
import { waitUntilQuiet } from "./noisy_neighbour/process_stats.ts";
import type { Sql } from "../db/connect.ts";

const PAYMENT_SECRET = "noisy-neighbour-payment-secret";
const DATABASE = "noisy";
const WARM_UP_SECONDS = 3;
/** After a window, the longest wait for the service to be quiet before the next one. */
const QUIET_WAIT_MS = 60_000;
/** Client addresses the service is told (X-Forwarded-For): the victim's and the attacker's. */
const VICTIM_FROM = "192.0.2.10";
const ATTACKER_FROM = "203.0.113.10";
const ZERO_FROM = "203.0.113.11";

function say(line: string) {
  console.log(`noisy-neighbour: ${line}`);
}

let cluster: BenchCluster | undefined;
let service: NoisyService | undefined;
let sql: Sql | undefined;
let receiver: DeliveryReceiver | undefined;
let cleaning: Promise<void> | undefined;

function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    await service?.stop().catch(() => {});
    await receiver?.close().catch(() => {});
    await sql?.end({ timeout: 2 }).catch(() => {});
    for (const problem of await removeCluster()) {
      console.error(`noisy-neighbour: cannot remove ${clusterName()}: ${problem}`);
    }
  })();
  return cleaning;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, async () => {
    say(`${signal}: stopping the service and removing the cluster`);
    await cleanUp();
    Deno.exit(130);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The SMTP receiver starts beside the HTTP server: wait for its greeting. */
async function smtpReady(port: number) {
  const deadline = performance.now() + 30_000;
  while (performance.now() < deadline) {
    const session = await openSession({ port, localAddress: "127.0.0.1" });
    if (!("code" in session)) {
      session.close();
      return;
    }
    await sleep(200);
  }
  throw new Error(`The SMTP receiver on port ${port} did not greet within 30 s`);
}

async function main(): Promise<boolean> {
  const started = performance.now();
  const settings = noisySettings(Deno.env.toObject());
  const machine = await describeMachine();
  say(`machine: ${machine}`);
  say(
    `${settings.attacks.length} attacks, ${settings.seconds} s each (NOISY_SECONDS), ${settings.settleSeconds} s ` +
      `between (NOISY_SETTLE_SECONDS); victim: ${LOAD.victimKvClients} KV clients, one mail every ` +
      `${LOAD.victimMailEveryMs} ms`,
  );
  cluster = await ownCluster();
  const databaseUrl = await cluster.createDatabase(DATABASE);
  service = await startNoisyService({ databaseUrl, paymentSecret: PAYMENT_SECRET });
  await smtpReady(service.smtpPort);
  say(`service: ${service.command} (pid ${service.pid}), the default configuration except:`);
  for (const v of service.variables) say(`  ${v.name}=${v.value}: ${v.why}`);
  const running = service;
  sql = cluster.connect(DATABASE, 2);

  const { tokens } = await fundedWallets(running.url, 2, PAYMENT_SECRET);
  const [victimToken, attackerToken] = tokens;
  const zero = { token: await newWallet(running.url, ZERO_FROM), from: ZERO_FROM };
  await spendAll(running.url, zero);
  const mailbox = new VictimMailbox();
  receiver = startReceiver("ok", mailbox.delivered);
  const mailAddress = await createMailbox(running.url, { token: victimToken, from: VICTIM_FROM }, {
    webhookId: "inbox",
    target: `${receiver.url}/inbox`,
  });
  say(
    `victim and attacker wallets funded with 1,000,000 credits each; a third wallet at 0; victim mailbox ${mailAddress}`,
  );

  const run: PhaseRun = {
    url: running.url,
    smtpPort: running.smtpPort,
    servicePid: running.pid,
    postmasterPid: cluster.postmasterPid,
    sql,
    victim: { token: victimToken, from: VICTIM_FROM, mailAddress },
    mailbox,
    attack: {
      url: running.url,
      smtpPort: running.smtpPort,
      attacker: { token: attackerToken, from: ATTACKER_FROM },
      zero,
    },
    settings,
    checkAlive() {
      if (running.exited()) throw new Error(`The service exited:\n${running.output().slice(-4000)}`);
    },
  };

  await warmUp(run, WARM_UP_SECONDS);
  await waitUntilQuiet(running.pid, QUIET_WAIT_MS);
  const rows: { phase: PhaseFigures; checks: Check[]; control?: KvReference }[] = [];
  const report = (phase: PhaseFigures, control?: KvReference) => {
    const checks = control ? attackChecks(phase, control) : [];
    rows.push({ phase, checks, control });
    for (const line of phaseLines(phase, checks, control)) console.log(line);
  };
  const settle = async () => {
    await sleep(settings.settleSeconds * 1000);
    if (!await waitUntilQuiet(running.pid, QUIET_WAIT_MS)) {
      say(
        `the service was still busy ${QUIET_WAIT_MS / 1000} s after the window: the next one starts anyway`,
      );
    }
  };
  // The victim alone between every two attacks: each attack is compared with the mean of the
  // windows just before and just after it, so that the machine's other work drifting over the
  // run weighs on both sides.
  let before = await runPhase(run, "control 0");
  report(before);
  for (const [i, attack] of settings.attacks.entries()) {
    await settle();
    say(`${attack} (${Math.round((performance.now() - started) / 1000)} s into the run)`);
    const attacked = await runPhase(run, attack, attack);
    await settle();
    const after = await runPhase(run, `control ${i + 1}`);
    report(attacked, controlReference(before, after));
    report(after);
    before = after;
  }

  say(
    `measuring the permanent-log budget (${Math.round((performance.now() - started) / 1000)} s into the run)`,
  );
  const budget = await measureLogBudget({
    url: running.url,
    sql,
    smtpPort: running.smtpPort,
    allowPrivateWebhooks: true,
  });
  for (const line of budgetLines(budget)) console.log(line);

  for (const line of summaryLines(rows)) console.log(line);
  const missed = rows.flatMap(({ phase, checks }) =>
    checks.filter((c) => !c.pass).map((c) => `${phase.name}: ${c.target}`)
  );
  say(
    missed.length === 0 ? "every target met" : `${missed.length} targets missed:\n  ${missed.join("\n  ")}`,
  );
  console.log(JSON.stringify({
    noisyNeighbour: {
      machine,
      settings,
      load: LOAD,
      service: {
        command: running.command,
        variables: Object.fromEntries(running.variables.map((v) => [v.name, v.value])),
      },
      phases: rows.map(({ phase, checks, control }) => ({
        ...phase,
        ...(control ? { control } : {}),
        checks,
      })),
      budget,
      missed,
    },
  }));
  return missed.length === 0;
}

try {
  const met = await main();
  await cleanUp();
  Deno.exit(met ? 0 : 1);
} catch (error) {
  console.error(`noisy-neighbour: ${error instanceof Error ? error.stack : error}`);
  if (service) console.error(`service output (last lines):\n${service.output().slice(-3000)}`);
  await cleanUp();
  Deno.exit(1);
}
