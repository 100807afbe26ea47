// The service against the honest ceiling: interleaved paired rounds of billed calls on random
// funded wallets and pgbench doing the same debit and append one transaction per call, then the
// hot-wallet line, the audit after the load and, when profiling, where the time went.
import type { BenchCluster } from "./cluster.ts";
import { type CpuSources, describeRun, pgbenchDatabase, pgbenchRun, type RunResult, wrkRun } from "./load.ts";
import { fundWallets, type RunningService, startService } from "./service.ts";
import { timeTask } from "./offline.ts";
import { type HotFunction, summarizeProfileDir } from "./cpu_profile.ts";
import { resetStatements, type TopStatement, topStatements } from "./statements.ts";
import { log, peakRssMb } from "./system.ts";
import { type BenchPooler, withPooledService } from "./pooler.ts";

export interface LoadOptions {
  seconds: number;
  rounds: number;
  wallets: number;
  profile: boolean;
  /** A checkout of an earlier commit whose service takes the same rounds (BENCH_BASELINE_DIR). */
  baselineDir?: string;
  /** A second service through this pooler takes the same rounds (BENCH_POOLER). */
  pooler?: BenchPooler;
}

export interface Round {
  get: RunResult;
  getCeiling: RunResult;
  post: RunResult;
  postCeiling: RunResult;
  /** The baseline service's runs in the same round, right after this service's. */
  baselineGet?: RunResult;
  baselinePost?: RunResult;
  /** The service through the pooler in the same round, right after the direct one. */
  pooledGet?: RunResult;
  pooledPost?: RunResult;
}

export interface LoadFigures {
  rounds: Round[];
  /** GET /healthz through the same server and wrk script: HTTP alone, no database, no billing. */
  floor: RunResult;
  hot: { ceiling: RunResult; get: RunResult; post: RunResult };
  auditClean: boolean;
  auditLine: string;
  servicePeakRssMb: number;
  profile?: { functions: HotFunction[]; statements: TopStatement[] };
}

/** Length of the unmeasured warm-up of each load before the rounds. */
const WARM_UP_SECONDS = 3;
interface Targets {
  serviceUrl: string;
  /** File of the tokens the calls pick from at random. */
  tokens: string;
  pgbenchUrl: string;
  /** The baseline service and its own funded wallets, when comparing with an earlier commit. */
  baseline?: { url: string; tokens: string; cpu: CpuSources };
  /** The service through the pooler, on the same database and wallets. */
  pooled?: { url: string; cpu: CpuSources };
}

async function tokensFile(tokens: string[]): Promise<string> {
  const file = await Deno.makeTempFile({ suffix: ".tokens" });
  await Deno.writeTextFile(file, tokens.join("\n") + "\n");
  return file;
}

/** The paired rounds: service GET, pgbench, service POST, pgbench, each pair back to back. */
async function pairedRounds(
  options: LoadOptions,
  targets: Targets,
  cpu: CpuSources,
): Promise<Round[]> {
  const { seconds, wallets } = options;
  // pgbench runs leave the service idle: only the cluster's CPU is charged to them.
  const ceiling = () =>
    pgbenchRun({ url: targets.pgbenchUrl, wallets, seconds }, { postmasterPid: cpu.postmasterPid });
  const service = (method: "GET" | "POST") =>
    wrkRun({ url: targets.serviceUrl, tokensFile: targets.tokens, method, seconds }, cpu);
  // Not measured: the service's code warmed up and both databases' caches filled.
  const warmUp = Math.min(WARM_UP_SECONDS, seconds);
  await wrkRun({ url: targets.serviceUrl, tokensFile: targets.tokens, method: "GET", seconds: warmUp }, cpu);
  await wrkRun({ url: targets.serviceUrl, tokensFile: targets.tokens, method: "POST", seconds: warmUp }, cpu);
  await pgbenchRun({ url: targets.pgbenchUrl, wallets, seconds: warmUp }, cpu);
  const base = targets.baseline;
  const baseline = (method: "GET" | "POST") =>
    base ? wrkRun({ url: base.url, tokensFile: base.tokens, method, seconds }, base.cpu) : undefined;
  if (base) {
    await wrkRun({ url: base.url, tokensFile: base.tokens, method: "GET", seconds: warmUp }, base.cpu);
  }
  const pooled = targets.pooled;
  const throughPooler = (method: "GET" | "POST") =>
    pooled ? wrkRun({ url: pooled.url, tokensFile: targets.tokens, method, seconds }, pooled.cpu) : undefined;
  if (pooled) await throughPooler("GET");
  const rounds: Round[] = [];
  for (let i = 1; i <= options.rounds; i++) {
    const get = await service("GET");
    const baselineGet = await baseline("GET");
    const pooledGet = await throughPooler("GET");
    const getCeiling = await ceiling();
    const post = await service("POST");
    const baselinePost = await baseline("POST");
    const pooledPost = await throughPooler("POST");
    const postCeiling = await ceiling();
    const beside = {
      ...(base ? { baselineGet, baselinePost } : {}),
      ...(pooled ? { pooledGet, pooledPost } : {}),
    };
    rounds.push({ get, getCeiling, post, postCeiling, ...beside });
    log(
      `round ${i}: GET ratio ${(get.rate / getCeiling.rate).toFixed(2)}, POST ratio ${
        (post.rate / postCeiling.rate).toFixed(2)
      }`,
    );
    const runs = { get, getCeiling, post, postCeiling, ...beside };
    for (const [label, run] of Object.entries(runs)) log(`  ${describeRun(label, run!)}`);
  }
  return rounds;
}

/** Runs `work` against a service started on the database, and stops it whatever happens. */
async function withService<T>(
  databaseUrl: string,
  cpuProfileDir: string | undefined,
  work: (service: RunningService) => Promise<T>,
  root?: string,
): Promise<T> {
  const service = await startService({ DATABASE_URL: databaseUrl }, { cpuProfileDir, root });
  try {
    return await work(service);
  } finally {
    await service.stop();
  }
}

/** The baseline's own database and wallets, funded through its own API (its schema is its own). */
async function fundBaseline(cluster: BenchCluster, options: LoadOptions, files: string[]) {
  const db = await cluster.createDatabase("bench_baseline");
  const tokens = await withService(
    db,
    undefined,
    (s) => fundWallets(s.url, options.wallets),
    options.baselineDir,
  );
  const file = await tokensFile(tokens);
  files.push(file);
  log(`baseline ${options.baselineDir}: funded ${options.wallets} wallets`);
  return { db, tokens: file };
}

/** The hot-wallet line: every call on one wallet, which measures row-lock contention. */
async function hotWallet(options: LoadOptions, targets: Targets, cpu: CpuSources) {
  log("hot wallet (one wallet for every call: row-lock contention, not the ceiling)");
  const { seconds } = options;
  const ceiling = await pgbenchRun({ url: targets.pgbenchUrl, wallets: 1, seconds }, {
    postmasterPid: cpu.postmasterPid,
  });
  const get = await wrkRun(
    { url: targets.serviceUrl, tokensFile: targets.tokens, method: "GET", seconds },
    cpu,
  );
  const post = await wrkRun(
    { url: targets.serviceUrl, tokensFile: targets.tokens, method: "POST", seconds },
    cpu,
  );
  for (const [label, run] of Object.entries({ ceiling, get, post })) log(`  ${describeRun(label, run)}`);
  return { ceiling, get, post };
}

type Paired = (base?: Targets["baseline"], pooled?: Targets["pooled"]) => Promise<Round[]>;

/**
 * The paired rounds, with the baseline's service (BENCH_BASELINE_DIR) or a service through the
 * pooler (BENCH_POOLER) beside this one, idle while the other is measured; the baseline wins.
 */
async function roundsBeside(
  cluster: BenchCluster,
  options: LoadOptions,
  baseline: { db: string; tokens: string } | undefined,
  paired: Paired,
): Promise<Round[]> {
  const cpuOf = (service: RunningService) => ({
    servicePid: service.pid,
    postmasterPid: cluster.postmasterPid,
  });
  if (baseline) {
    return await withService(
      baseline.db,
      undefined,
      (service) => paired({ url: `${service.url}/`, tokens: baseline.tokens, cpu: cpuOf(service) }),
      options.baselineDir,
    );
  }
  if (options.pooler) {
    return await withPooledService(
      cluster,
      "bench_service",
      (service) => paired(undefined, { url: `${service.url}/`, cpu: cpuOf(service) }),
    );
  }
  return await paired();
}

/**
 * Three service runs on one database: one funds the wallets, one takes the paired rounds (under
 * the CPU profiler when profiling, so that the profile holds the rounds and little else), and
 * one takes the hot-wallet line. The audit runs after all of them.
 */
export async function serviceLoad(cluster: BenchCluster, options: LoadOptions): Promise<LoadFigures> {
  const serviceDb = await cluster.createDatabase("bench_service");
  const pgbenchUrl = await pgbenchDatabase(cluster, options.wallets);
  const profileDir = options.profile ? await Deno.makeTempDir({ prefix: "bench-cpu-prof-" }) : undefined;
  const admin = cluster.connect("bench_service");
  const files: string[] = [];
  try {
    const started = performance.now();
    const tokens = await withService(
      serviceDb,
      undefined,
      (service) => fundWallets(service.url, options.wallets),
    );
    log(
      `funded ${options.wallets} wallets through the API in ${
        ((performance.now() - started) / 1000).toFixed(1)
      } s`,
    );
    await admin`analyze`;
    files.push(await tokensFile(tokens), await tokensFile(tokens.slice(0, 1)));
    if (options.profile) await resetStatements(admin);

    const baseline = options.baselineDir ? await fundBaseline(cluster, options, files) : undefined;
    let servicePeakRssMb = 0;
    let floor: RunResult | undefined;
    const paired = (base?: Targets["baseline"], pooled?: Targets["pooled"]) =>
      withService(serviceDb, profileDir, async (service) => {
        const cpu = { servicePid: service.pid, postmasterPid: cluster.postmasterPid };
        const targets = {
          serviceUrl: `${service.url}/`,
          tokens: files[0],
          pgbenchUrl,
          baseline: base,
          pooled,
        };
        const rounds = await pairedRounds(options, targets, cpu);
        servicePeakRssMb = peakRssMb(service.pid);
        floor = await wrkRun(
          {
            url: targets.serviceUrl,
            tokensFile: targets.tokens,
            method: "GET",
            seconds: options.seconds,
            path: "/healthz",
          },
          cpu,
        );
        log(`  ${describeRun("floor, GET /healthz (HTTP alone)", floor)}`);
        return rounds;
      });
    const rounds = await roundsBeside(cluster, options, baseline, paired);
    const statements = options.profile ? await topStatements(admin, "bench_service") : [];
    const functions = profileDir ? await summarizeProfileDir(profileDir) : [];
    const hot = await withService(
      serviceDb,
      undefined,
      (service) =>
        hotWallet(options, { serviceUrl: `${service.url}/`, tokens: files[1], pgbenchUrl }, {
          servicePid: service.pid,
          postmasterPid: cluster.postmasterPid,
        }),
    );
    // Every call the load made must add up in the ledger.
    const audit = await timeTask("audit", serviceDb, 0);
    log(`audit after the load: ${audit.clean ? "clean" : "MISMATCH"} (${audit.firstLine})`);
    return {
      rounds,
      floor: floor!,
      hot,
      auditClean: audit.clean,
      auditLine: audit.firstLine,
      servicePeakRssMb,
      ...(options.profile ? { profile: { functions, statements } } : {}),
    };
  } finally {
    await admin.end();
    for (const file of files) await Deno.remove(file).catch(() => {});
    if (profileDir) await Deno.remove(profileDir, { recursive: true }).catch(() => {});
  }
}
