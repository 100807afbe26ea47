// `deno task chaos`: the service under a bounded client load on a PostgreSQL cluster of its own
// (made with pg_createcluster on a spare port, removed at the end, on failure and on Ctrl-C too),
// through CHAOS_ROUNDS rounds (default 5) of: Postgres restarted, Postgres stopped for 20 s, the
// service killed with SIGKILL and started again. Prints each round's figures and one JSON line.
import { generateMasterKeyText } from "../secrets/master_key.ts";
import { freePort } from "../net/free_port.ts";
import { type Cluster, createCluster } from "./chaos/cluster.ts";
import { serviceProcess } from "./chaos/service_process.ts";
import { fundedWallets } from "./chaos/wallets.ts";
import { type FaultFigures, type RoundReport, runRound } from "./chaos/round.ts";

const ROUNDS = Number(Deno.env.get("CHAOS_ROUNDS") ?? 5);
/** Concurrent clients, one wallet each. */
const CLIENTS = 16;
const PAYMENT_SECRET = "chaos-payment-secret";

if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || ROUNDS > 100) {
  console.error(`Invalid CHAOS_ROUNDS "${Deno.env.get("CHAOS_ROUNDS")}": must be 1 to 100`);
  Deno.exit(1);
}

let cluster: Cluster | undefined;
let service: ReturnType<typeof serviceProcess> | undefined;

async function cleanUp() {
  await service?.kill().catch(() => {});
  await cluster?.drop().catch((error) => console.error(`Cannot remove cluster ${cluster?.name}: ${error}`));
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, async () => {
    console.log(`chaos: ${signal}, removing the cluster`);
    await cleanUp();
    Deno.exit(130);
  });
}

function say(line: string) {
  console.log(`chaos: ${line}`);
}

function describe(r: RoundReport): string {
  const seconds = (s: number | null) => (s === null ? "never" : `${s} s`);
  const gap = r.outageSeconds;
  const back = r.recoverySeconds;
  return `round ${r.round}: ${r.acknowledgedWrites} acknowledged writes, ${r.lostWrites} lost, ` +
    `${r.serverErrors} 5xx other than 503 (${r.unavailable} 503 in ${r.unavailableP99Ms} ms at p99, ` +
    `${r.unavailableMaxMs} ms at most; ${r.noAnswer} unanswered while the service ` +
    `was down, ${r.slowAnswers} answers over 2 s), ${r.wrongCharges} wallets charged wrongly; ` +
    `writes failed for ${seconds(gap.postgresRestart)} around the Postgres restart, ` +
    `${seconds(gap.postgresStopped)} around the 20 s stop, ${seconds(gap.serviceKilled)} around kill -9, ` +
    `and succeeded again ${seconds(back.postgresRestart)}, ${seconds(back.postgresStopped)} and ` +
    `${seconds(back.serviceKilled)} after each ended; ${r.serviceCrashes} service crashes; ` +
    `audit ${r.audit}, replay ${r.replay}`;
}

try {
  say(`creating a PostgreSQL cluster`);
  cluster = await createCluster();
  say(`cluster ${cluster.name} on port ${cluster.port}`);
  // The run's own master key: the service refuses Postgres without one; the audit needs none.
  const databaseEnv = {
    ...Deno.env.toObject(),
    DATABASE_URL: cluster.databaseUrl,
    MASTER_KEY: generateMasterKeyText(),
  };
  const port = freePort();
  service = serviceProcess(port, {
    ...databaseEnv,
    SMTP_PORT: "0",
    TRUST_PROXY: "1",
    LOG_REQUESTS: "0",
    PAYMENT_WEBHOOK_SECRET: PAYMENT_SECRET,
  });
  await service.start();
  const { tokens } = await fundedWallets(service.url, CLIENTS, PAYMENT_SECRET);
  say(`service on ${service.url}, ${CLIENTS} clients, ${ROUNDS} rounds`);
  const reports: RoundReport[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const report = await runRound(round, { cluster, service, tokens, databaseEnv, say });
    reports.push(report);
    console.log(describe(report));
  }
  const sum = (pick: (r: RoundReport) => number) => reports.reduce((total, r) => total + pick(r), 0);
  const worstOf = (pick: (r: RoundReport) => FaultFigures): FaultFigures => {
    const worst = (fault: keyof FaultFigures) => {
      const values = reports.map((r) => pick(r)[fault]);
      return values.includes(null) ? null : Math.max(...(values as number[]));
    };
    return {
      postgresRestart: worst("postgresRestart"),
      postgresStopped: worst("postgresStopped"),
      serviceKilled: worst("serviceKilled"),
    };
  };
  const totals = {
    rounds: ROUNDS,
    clients: CLIENTS,
    acknowledgedWrites: sum((r) => r.acknowledgedWrites),
    lostWrites: sum((r) => r.lostWrites),
    serverErrorsOtherThan503: sum((r) => r.serverErrors),
    wrongCharges: sum((r) => r.wrongCharges),
    slowAnswers: sum((r) => r.slowAnswers),
    slowest503Ms: Math.max(...reports.map((r) => r.unavailableMaxMs)),
    serviceCrashes: sum((r) => r.serviceCrashes),
    worstRecoverySeconds: worstOf((r) => r.recoverySeconds),
    worstOutageSeconds: worstOf((r) => r.outageSeconds),
    auditClean: reports.every((r) => r.audit === "clean"),
    replayClean: reports.every((r) => r.replay === "clean"),
  };
  console.log(JSON.stringify({ chaos: totals, rounds: reports }));
  const failed = totals.lostWrites || totals.serverErrorsOtherThan503 || totals.wrongCharges ||
    totals.serviceCrashes || !totals.auditClean || !totals.replayClean;
  await cleanUp();
  Deno.exit(failed ? 1 : 0);
} catch (error) {
  console.error(`chaos: ${error instanceof Error ? error.stack : error}`);
  if (service) console.error(`service output (last lines):\n${service.output().slice(-3000)}`);
  await cleanUp();
  Deno.exit(1);
}
