// The service against the honest ceiling: interleaved paired rounds of billed calls on random
// funded wallets and pgbench doing the same debit and append one transaction per call, then the
// hot-wallet line, the audit after the load and, when profiling, where the time went.
import type { BenchCluster } from "./cluster.ts";
import { type CpuSources, describeRun, pgbenchDatabase, pgbenchRun, type RunResult, wrkRun } from "./load.ts";
import { fundWallets, type RunningService, type StartOptions, startService } from "./service.ts";
import { timeTask } from "./offline.ts";
import { type HotFunction, summarizeProfileDir } from "./cpu_profile.ts";
import { resetStatements, type TopStatement, topStatements } from "./statements.ts";
import { log, peakRssMb, sleep } from "./system.ts";
import { type BatchSummary, STATS_INTERVAL_MS } from "../../ledger/batch_stats.ts";
import { type BenchPooler, withPooledService } from "./pooler.ts";
import { metricsOnService } from "./metrics_cost.ts";

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
  /** The same service with the request log off (LOG_REQUESTS=0), on the same database and wallets. */
  logOffGet: RunResult;
  logOffPost: RunResult;
  /** The baseline service's runs in the same round. */
  baselineGet?: RunResult;
  baselinePost?: RunResult;
  /** The same service with metrics on (METRICS_PORT, scraped every second) in the same round. */
  metricsOnGet?: RunResult;
  metricsOnPost?: RunResult;
  /** The service through the pooler in the same round. */
  pooledGet?: RunResult;
  pooledPost?: RunResult;
  /** The measured service's ledger batches during its GET and its POST run, from its "ledger" lines. */
  getBatches?: BatchSummary;
  postBatches?: BatchSummary;
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

/** A service that takes the rounds: the measured one, or one beside it, idle while another is measured. */
interface Contender {
  name: "service" | "logOff" | "metricsOn" | "baseline" | "pooled";
  url: string;
  /** File of the tokens the calls pick from at random. */
  tokens: string;
  cpu: CpuSources;
}

async function tokensFile(tokens: string[]): Promise<string> {
  const file = await Deno.makeTempFile({ suffix: ".tokens" });
  await Deno.writeTextFile(file, tokens.join("\n") + "\n");
  return file;
}

/** When the measured service ran a load, to find its "ledger" lines afterwards. */
interface RunWindow {
  round: number;
  method: "GET" | "POST";
  start: number;
  end: number;
}

/**
 * The paired rounds. In each, for GET then POST: every contender's run, then pgbench doing the same
 * work. The contenders' order turns by one each round, so none always runs first or right after
 * pgbench (an A/A run of one commit showed ±0.04 between positions).
 */
async function pairedRounds(
  options: LoadOptions,
  contenders: Contender[],
  pgbenchUrl: string,
  postmasterPid: number,
): Promise<{ rounds: Round[]; windows: RunWindow[] }> {
  const { seconds, wallets } = options;
  // pgbench runs leave the services idle: only the cluster's CPU is charged to them.
  const ceiling = () => pgbenchRun({ url: pgbenchUrl, wallets, seconds }, { postmasterPid });
  const load = (c: Contender, method: "GET" | "POST", length = seconds) =>
    wrkRun({ url: c.url, tokensFile: c.tokens, method, seconds: length }, c.cpu);
  // Not measured: every service's code warmed up and both databases' caches filled.
  const warmUp = Math.min(WARM_UP_SECONDS, seconds);
  for (const c of contenders) {
    await load(c, "GET", warmUp);
    await load(c, "POST", warmUp);
  }
  await pgbenchRun({ url: pgbenchUrl, wallets, seconds: warmUp }, { postmasterPid });
  const rounds: Round[] = [];
  const windows: RunWindow[] = [];
  for (let i = 1; i <= options.rounds; i++) {
    const turn = (i - 1) % contenders.length;
    const order = [...contenders.slice(turn), ...contenders.slice(0, turn)];
    const runs: Record<string, RunResult> = {};
    for (const method of ["GET", "POST"] as const) {
      const side = method === "GET" ? "Get" : "Post";
      for (const c of order) {
        const start = Date.now();
        const run = await load(c, method);
        if (c.name === "service") windows.push({ round: i, method, start, end: Date.now() });
        runs[c.name === "service" ? method.toLowerCase() : `${c.name}${side}`] = run;
      }
      runs[`${method.toLowerCase()}Ceiling`] = await ceiling();
    }
    const round = runs as unknown as Round;
    rounds.push(round);
    log(
      `round ${i} (order ${order.map((c) => c.name).join(", ")}): GET ratio ${
        (round.get.rate / round.getCeiling.rate).toFixed(2)
      }, POST ratio ${(round.post.rate / round.postCeiling.rate).toFixed(2)}`,
    );
    for (const [label, run] of Object.entries(runs)) log(`  ${describeRun(label, run)}`);
  }
  return { rounds, windows };
}

/**
 * Each run's batches, from the service's "ledger" lines: a line sums the STATS_INTERVAL_MS before
 * it, and counts for a run when that window meets this run and no other of the service's runs (the
 * service is idle between them). Of several lines, the one with the most batches stands for the run.
 */
export function batchesOfRuns(logText: string, windows: RunWindow[]): (BatchSummary | undefined)[] {
  const lines = logText.split("\n").filter((line) => line.includes('"message":"ledger"'))
    .map((line) => JSON.parse(line) as BatchSummary & { time: string });
  return windows.map((w) => {
    const meets = (line: { time: string }, x: RunWindow) => {
      const end = Date.parse(line.time);
      return end > x.start && end - STATS_INTERVAL_MS < x.end;
    };
    const own = lines.filter((line) => meets(line, w) && windows.every((x) => x === w || !meets(line, x)));
    return own.sort((a, b) => b.batches - a.batches)[0];
  });
}

/** Runs `work` against a service started on the database, and stops it whatever happens. */
async function withService<T>(
  databaseUrl: string,
  options: StartOptions & { env?: Record<string, string> },
  work: (service: RunningService) => Promise<T>,
): Promise<T> {
  const service = await startService({ DATABASE_URL: databaseUrl, ...options.env }, options);
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
    { root: options.baselineDir, funding: true },
    (s) => fundWallets(s.url, options.wallets),
  );
  const file = await tokensFile(tokens);
  files.push(file);
  log(`baseline ${options.baselineDir}: funded ${options.wallets} wallets`);
  return { db, tokens: file };
}

/** The hot-wallet line: every call on one wallet, which measures row-lock contention. */
async function hotWallet(options: LoadOptions, service: Contender, pgbenchUrl: string) {
  log("hot wallet (one wallet for every call: row-lock contention, not the ceiling)");
  const { seconds } = options;
  const ceiling = await pgbenchRun({ url: pgbenchUrl, wallets: 1, seconds }, {
    postmasterPid: service.cpu.postmasterPid,
  });
  const load = (method: "GET" | "POST") =>
    wrkRun({ url: service.url, tokensFile: service.tokens, method, seconds }, service.cpu);
  const get = await load("GET");
  const post = await load("POST");
  for (const [label, run] of Object.entries({ ceiling, get, post })) log(`  ${describeRun(label, run)}`);
  return { ceiling, get, post };
}

/**
 * Runs `work` with the services that take the rounds beside the measured one, each idle while
 * another is measured: the same service with the request log off and with metrics on, always; the baseline's
 * (BENCH_BASELINE_DIR) and one through the pooler (BENCH_POOLER) when asked for.
 */
async function withContenders<T>(
  cluster: BenchCluster,
  options: LoadOptions,
  beside: { serviceDb: string; tokens: string; baseline?: { db: string; tokens: string } },
  work: (contenders: Contender[]) => Promise<T>,
): Promise<T> {
  const contender = (
    name: Contender["name"],
    service: RunningService,
    tokens = beside.tokens,
  ): Contender => ({
    name,
    url: `${service.url}/`,
    tokens,
    cpu: { servicePid: service.pid, postmasterPid: cluster.postmasterPid },
  });
  const withPooled = (inner: (c: Contender[]) => Promise<T>) =>
    options.pooler
      ? withPooledService(cluster, "bench_service", (s) => inner([contender("pooled", s)]))
      : inner([]);
  const withBaseline = (inner: (c: Contender[]) => Promise<T>) => {
    const baseline = beside.baseline;
    if (!baseline) return inner([]);
    return withService(
      baseline.db,
      { root: options.baselineDir },
      (s) => inner([contender("baseline", s, baseline.tokens)]),
    );
  };
  const metrics = metricsOnService();
  const withMetricsOn = (inner: (c: Contender[]) => Promise<T>) =>
    withService(beside.serviceDb, { env: metrics.env }, async (s) => {
      const stopScraping = metrics.scrape();
      try {
        return await inner([contender("metricsOn", s)]);
      } finally {
        await stopScraping();
      }
    });
  return await withService(
    beside.serviceDb,
    { env: { LOG_REQUESTS: "0" } },
    (logOff) =>
      withMetricsOn((on) =>
        withBaseline((base) =>
          withPooled((pooled) => work([contender("logOff", logOff), ...on, ...base, ...pooled]))
        )
      ),
  );
}

/**
 * Service runs on one database: one funds the wallets; one takes the paired rounds beside the
 * log-off service (and the baseline's or the pooled one), under the CPU profiler when profiling,
 * so that the profile holds the rounds and little else; one takes the hot-wallet line. The audit
 * runs after all of them.
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
      { funding: true },
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
    const rounds = await withContenders(
      cluster,
      options,
      { serviceDb, tokens: files[0], baseline },
      (beside) =>
        withService(serviceDb, { cpuProfileDir: profileDir }, async (service) => {
          const measured: Contender = {
            name: "service",
            url: `${service.url}/`,
            tokens: files[0],
            cpu: { servicePid: service.pid, postmasterPid: cluster.postmasterPid },
          };
          const { rounds, windows } = await pairedRounds(
            options,
            [measured, ...beside],
            pgbenchUrl,
            cluster.postmasterPid,
          );
          servicePeakRssMb = peakRssMb(service.pid);
          floor = await wrkRun(
            {
              url: measured.url,
              tokensFile: measured.tokens,
              method: "GET",
              seconds: options.seconds,
              path: "/healthz",
            },
            measured.cpu,
          );
          log(`  ${describeRun("floor, GET /healthz (HTTP alone)", floor)}`);
          // The last "ledger" line is written up to STATS_INTERVAL_MS after the last run.
          await sleep(STATS_INTERVAL_MS);
          const batches = batchesOfRuns(await Deno.readTextFile(service.logFile), windows);
          windows.forEach((w, i) => {
            const round = rounds[w.round - 1];
            if (w.method === "GET") round.getBatches = batches[i];
            else round.postBatches = batches[i];
          });
          return rounds;
        }),
    );
    const statements = options.profile ? await topStatements(admin, "bench_service") : [];
    const functions = profileDir ? await summarizeProfileDir(profileDir) : [];
    const hot = await withService(serviceDb, {}, (service) =>
      hotWallet(options, {
        name: "service",
        url: `${service.url}/`,
        tokens: files[1],
        cpu: { servicePid: service.pid, postmasterPid: cluster.postmasterPid },
      }, pgbenchUrl));
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
