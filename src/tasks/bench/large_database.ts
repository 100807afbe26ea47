// The bench's large-database part (issue 22): the service's paired rounds on a database seeded by
// COPY with a million wallets, ten million KV entries and fifty million events, beside the same
// rounds on a database of the load's 10,000 wallets seeded alike, against the same pgbench ceiling.
// What it shows is what size alone costs a call: larger indexes, a colder cache.
import type { BenchCluster } from "./cluster.ts";
import { describeRun, pgbenchRun, type RunResult, wrkRun } from "./load.ts";
import { type LargeScale, seededToken, seedLargeDatabase } from "./large_seed.ts";
import { type TaskRun, timeTask } from "./offline.ts";
import { median } from "./report.ts";
import { startService } from "./service.ts";
import { log } from "./system.ts";
import { migrate } from "../../db/migrate.ts";

export interface LargeOptions {
  seconds: number;
  rounds: number;
  /** Wallets the load calls: the first of the seeded ones, and the whole of the small database. */
  wallets: number;
  large: LargeScale;
}

export interface LargeRound {
  get: RunResult;
  smallGet: RunResult;
  getCeiling: RunResult;
  post: RunResult;
  smallPost: RunResult;
  postCeiling: RunResult;
}

export interface LargeFigures {
  scale: LargeScale;
  /** The COPY of every table, then the VACUUM ANALYZE that a database this size has had. */
  seedSeconds: number;
  vacuumSeconds: number;
  rows: Record<string, number>;
  /** pg_total_relation_size of each table (its partitions summed), and the whole database. */
  bytes: Record<string, number>;
  rounds: LargeRound[];
  audit: TaskRun;
}

/** COPY connections: one per seeded table, plus one spare. */
const SEED_CONNECTIONS = 7;
/** Length of the unmeasured warm-up of each service and pgbench before the rounds. */
const WARM_UP_SECONDS = 3;
/** Tables whose size is reported. */
const TABLES = ["events", "wallets", "kv_entries", "call_logs", "daily_usage", "payments"];

const seconds = (since: number) => (performance.now() - since) / 1000;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const gb = (bytes: number) => (bytes / 1024 ** 3).toFixed(2);

/**
 * A database seeded to `scale`, vacuumed and analysed. The checkpoint distance is raised while the
 * COPY runs (a checkpoint every gigabyte of WAL would write each page many times) and put back,
 * with a checkpoint, before anything is measured.
 */
async function seededDatabase(cluster: BenchCluster, name: string, scale: LargeScale) {
  const url = await cluster.createDatabase(name);
  const sql = cluster.connect(name, SEED_CONNECTIONS);
  const admin = cluster.connect("postgres", 1);
  try {
    await migrate(sql);
    await admin`alter system set max_wal_size = '16GB'`;
    await admin`select pg_reload_conf()`;
    const started = performance.now();
    let lastLog = performance.now();
    const rows = await seedLargeDatabase(sql, scale, {
      now: new Date(),
      progress: (done) => {
        if (performance.now() - lastLog < 30_000) return;
        lastLog = performance.now();
        log(
          `  ${name}: ${fmt(done)} of ${fmt(scale.wallets)} wallets seeded (${
            seconds(started).toFixed(0)
          } s)`,
        );
      },
    });
    const seedSeconds = seconds(started);
    const vacuumStarted = performance.now();
    // Autovacuum would otherwise take these freshly copied tables during the rounds.
    await sql`vacuum (analyze)`;
    const vacuumSeconds = seconds(vacuumStarted);
    await admin`alter system reset max_wal_size`;
    await admin`select pg_reload_conf()`;
    await admin`checkpoint`;
    return { url, rows, seedSeconds, vacuumSeconds, bytes: await tableBytes(sql) };
  } finally {
    await admin.end();
    await sql.end();
  }
}

async function tableBytes(sql: ReturnType<BenchCluster["connect"]>): Promise<Record<string, number>> {
  const bytes: Record<string, number> = {};
  for (const table of TABLES) {
    // A partitioned table holds no rows itself: its size is its partitions'.
    const [{ size }] = await sql`
      select pg_total_relation_size(${table}::regclass)
             + coalesce((select sum(pg_total_relation_size(inhrelid)) from pg_inherits
                         where inhparent = ${table}::regclass), 0) as size`;
    bytes[table] = Number(size);
  }
  const [{ size }] = await sql`select pg_database_size(current_database()) as size`;
  bytes.database = Number(size);
  return bytes;
}

/** pgbench's own database: the service's schema and the load's number of wallets, as in the load part. */
async function pgbenchDatabase(cluster: BenchCluster, wallets: number): Promise<string> {
  const url = await cluster.createDatabase("bench_large_pgbench");
  const sql = cluster.connect("bench_large_pgbench");
  try {
    await migrate(sql);
    await sql.unsafe(
      `insert into wallets (wallet_id, balance, version, created_at, last_used_at, deactivated_at)
       select lpad(w::text, 64, '0'), 1000000000, 0, now(), now(), null from generate_series(1, $1::int) w`,
      [wallets],
    );
    await sql`analyze`;
  } finally {
    await sql.end();
  }
  return url;
}

/** The small database: the load's wallets only, each seeded like a wallet of the large one. */
export function smallScale(options: LargeOptions): LargeScale {
  const { wallets, large } = options;
  return {
    wallets,
    kvEntries: Math.round((large.kvEntries / large.wallets) * wallets),
    events: Math.round((large.events / large.wallets) * wallets),
  };
}

type SeedFigures = Omit<LargeFigures, "rounds" | "audit">;

/** What the seeding wrote and took. */
function seedLines(figures: SeedFigures): string[] {
  const { scale, bytes, rows } = figures;
  return [
    `large database: ${fmt(scale.wallets)} wallets, ${fmt(scale.kvEntries)} KV entries, ` +
    `${fmt(scale.events)} events, seeded by COPY in ${figures.seedSeconds.toFixed(0)} s ` +
    `(+ VACUUM ANALYZE ${figures.vacuumSeconds.toFixed(0)} s), ${gb(bytes.database)} GB`,
    `  sizes: ` + TABLES.map((t) => `${t} ${gb(bytes[t])} GB (${fmt(rows[t])} rows)`).join(", "),
  ];
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * Median ratios of the rounds: each service against the pgbench run of its round, and the large
 * database's service against the small one's run just after it (paired, as the ratios are).
 */
export function largeRatios(rounds: LargeRound[]) {
  const side = (f: (r: LargeRound) => number) => {
    const values = rounds.map(f);
    return { median: round2(median(values)), rounds: values.map(round2) };
  };
  return {
    get: side((r) => r.get.rate / r.getCeiling.rate),
    smallGet: side((r) => r.smallGet.rate / r.getCeiling.rate),
    getLargeVsSmall: side((r) => r.get.rate / r.smallGet.rate),
    post: side((r) => r.post.rate / r.postCeiling.rate),
    smallPost: side((r) => r.smallPost.rate / r.postCeiling.rate),
    postLargeVsSmall: side((r) => r.post.rate / r.smallPost.rate),
  };
}

export function largeLines(figures: LargeFigures): string[] {
  const ratios = largeRatios(figures.rounds);
  const lines = seedLines(figures);
  for (
    const [label, large, small, versus] of [
      ["GET", ratios.get, ratios.smallGet, ratios.getLargeVsSmall],
      ["POST", ratios.post, ratios.smallPost, ratios.postLargeVsSmall],
    ] as const
  ) {
    lines.push(
      `  ${label}: ratio ${large.median} on the large database, ${small.median} on the small one; ` +
        `large ${versus.median}× small (rounds ${versus.rounds.join(", ")}; target ≥ 0.8)`,
    );
  }
  lines.push(
    `  audit of the large database after the load: ${figures.audit.clean ? "clean" : "MISMATCH"} ` +
      `(${figures.audit.firstLine})`,
  );
  return lines;
}

/** The figures of the JSON line: ratios, sizes and times, without every run. */
export function largeJson(figures: LargeFigures): Record<string, unknown> {
  const ratios = largeRatios(figures.rounds);
  return {
    scale: figures.scale,
    seedSeconds: Math.round(figures.seedSeconds),
    vacuumSeconds: Math.round(figures.vacuumSeconds),
    rows: figures.rows,
    bytes: figures.bytes,
    ...Object.fromEntries(Object.entries(ratios).map(([name, side]) => [name, side.median])),
    auditClean: figures.audit.clean,
    auditSeconds: Math.round(figures.audit.seconds),
  };
}

/**
 * Seeds both databases, then the paired rounds: the large database's service, the small one's, and
 * pgbench, back to back for GET then POST; each service idle while another load runs.
 */
export async function largeDatabaseMeasure(
  cluster: BenchCluster,
  options: LargeOptions,
): Promise<LargeFigures> {
  const { wallets, large } = options;
  if (wallets > large.wallets) {
    throw new Error(
      `Invalid BENCH_WALLETS "${wallets}": must be at most BENCH_LARGE_WALLETS (${large.wallets})`,
    );
  }
  const seeded = await seededDatabase(cluster, "bench_large", large);
  const figures: SeedFigures = {
    scale: large,
    seedSeconds: seeded.seedSeconds,
    vacuumSeconds: seeded.vacuumSeconds,
    rows: seeded.rows,
    bytes: seeded.bytes,
  };
  for (const line of seedLines(figures)) log(line);
  const small = await seededDatabase(cluster, "bench_large_small", smallScale(options));
  const pgbenchUrl = await pgbenchDatabase(cluster, wallets);
  const tokens = await Deno.makeTempFile({ suffix: ".tokens" });
  await Deno.writeTextFile(
    tokens,
    Array.from({ length: wallets }, (_, i) => seededToken(i)).join("\n") + "\n",
  );
  const largeService = await startService({ DATABASE_URL: seeded.url });
  const smallService = await startService({ DATABASE_URL: small.url });
  const rounds: LargeRound[] = [];
  try {
    const cpuOf = (pid: number) => ({ servicePid: pid, postmasterPid: cluster.postmasterPid });
    const call = (service: typeof largeService, method: "GET" | "POST", runSeconds = options.seconds) =>
      wrkRun({ url: `${service.url}/`, tokensFile: tokens, method, seconds: runSeconds }, cpuOf(service.pid));
    const ceiling = (runSeconds = options.seconds) =>
      pgbenchRun({ url: pgbenchUrl, wallets, seconds: runSeconds }, { postmasterPid: cluster.postmasterPid });
    const warmUp = Math.min(WARM_UP_SECONDS, options.seconds);
    for (const service of [largeService, smallService]) {
      await call(service, "GET", warmUp);
      await call(service, "POST", warmUp);
    }
    await ceiling(warmUp);
    for (let i = 1; i <= options.rounds; i++) {
      const get = await call(largeService, "GET");
      const smallGet = await call(smallService, "GET");
      const getCeiling = await ceiling();
      const post = await call(largeService, "POST");
      const smallPost = await call(smallService, "POST");
      const postCeiling = await ceiling();
      const round = { get, smallGet, getCeiling, post, smallPost, postCeiling };
      rounds.push(round);
      log(
        `large round ${i}: GET ratio ${(get.rate / getCeiling.rate).toFixed(2)} (small ${
          (smallGet.rate / getCeiling.rate).toFixed(2)
        }), POST ratio ${(post.rate / postCeiling.rate).toFixed(2)} (small ${
          (smallPost.rate / postCeiling.rate).toFixed(2)
        })`,
      );
      for (const [label, run] of Object.entries(round)) log(`  ${describeRun(label, run)}`);
    }
  } finally {
    await largeService.stop();
    await smallService.stop();
    await Deno.remove(tokens).catch(() => {});
  }
  // Every seeded event and every call of the load must add up.
  const audit = await timeTask("audit", seeded.url, large.events);
  return { ...figures, rounds, audit };
}
