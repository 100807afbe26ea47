// The restore drill's steps, each timed: a source cluster archiving its WAL to pgBackRest, seeded
// and written to through the service; a full and a differential backup; a named restore point with
// more writes after it; then the latest backup and the restore point each restored into a new
// cluster, promoted, audited, replayed and compared with the source's state at that moment.
import type { Sql } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import { seedLedger } from "../bench/ledger_seed.ts";
import { ensureClusterTools, PG_VERSION } from "../bench/cluster.ts";
import { sleep } from "../bench/system.ts";
import {
  confString,
  connectUrl,
  createCluster,
  createDatabase,
  type DrillCluster,
  emptyDataFolder,
  waitForPromotion,
} from "./clusters.ts";
import {
  type BackupInfo,
  createRepository,
  ensurePgbackrest,
  listBackups,
  type Repository,
  runAsPostgres,
} from "./pgbackrest.ts";
import {
  compareStates,
  compareStreams,
  compareWithin,
  type LedgerState,
  readLedgerState,
  type StateComparison,
} from "./ledger_state.ts";
import { billedWrites, type DrillService, newWallet, startService } from "./service_writes.ts";
import { runCheckTask, type TaskResult } from "./checks.ts";
import { deployedArchiveSettings, POSTGRESQL_FILE, settingSeconds } from "./deploy_settings.ts";

/** The name of the drill's restore point (pg_create_restore_point). */
export const RESTORE_POINT = "drill_point";
/** Service wallets written to, and billed writes per wallet in each of the three write rounds. */
const SERVICE_WALLETS = 3;
const WRITES_PER_WALLET = 5;
/** Bounds of the waits: a restored cluster's recovery, and one WAL segment's archiving. */
const RECOVERY_TIMEOUT_MS = 300_000;
const ARCHIVE_WAIT_MS = 60_000;

export interface DrillOptions {
  /** Events the seeder writes before the first backup. */
  events: number;
  /** A live source instead of one built by the drill: its existing pgBackRest stanza is restored. */
  live?: LiveSource;
  say(line: string): void;
}

export interface LiveSource {
  /** The service's database (DRILL_SOURCE_URL); it must archive to the stanza below. */
  url: string;
  /** pgBackRest's configuration file and stanza of that database. */
  config: string;
  stanza: string;
  /** MASTER_KEY or MASTER_KEY_FILE, for replay. */
  masterKeyEnv: Record<string, string>;
}

export interface RestoreReport {
  kind: "latest" | "pointInTime";
  /** What was restored: the latest backup and all archived WAL, or up to the named point. */
  target: string;
  /** pgbackrest restore, then the server's start to its promotion (WAL replay). */
  restoreSeconds: number;
  recoverySeconds: number;
  /** Recovery time: restore and WAL replay, until the cluster takes writes. */
  rtoSeconds: number;
  /** The last transaction replayed (pg_last_xact_replay_timestamp), and the server's own words. */
  reachedTransactionAt: string | null;
  recoveryLog: string[];
  expected: { wallets: number; events: number };
  restored: { wallets: number; events: number };
  comparison: StateComparison;
  audit: TaskResult;
  replay: TaskResult;
  ok: boolean;
}

export interface DrillReport {
  events: number;
  databaseMb: number;
  pgbackrest: string;
  backups: BackupInfo[];
  /**
   * Billed writes acknowledged by the service: before the differential backup, after it, after the
   * point (none with a live source: the drill writes nothing there).
   */
  writes: { beforeDiff: number; afterDiff: number; afterPoint: number; walletsAfterPoint: number } | null;
  restorePoint: { name: string; lsn: string; at: string };
  archive: { timeoutSeconds: number; segmentArchivedSeconds: number };
  steps: Record<string, number>;
  restores: RestoreReport[];
  ok: boolean;
}

export interface Drill {
  run(): Promise<DrillReport>;
  /** Stops the service, drops every cluster and removes the repository; safe to call again. */
  cleanUp(): Promise<void>;
  /** The service's last output lines, for a failure report. */
  serviceOutput(): string;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

const LATEST = "latest backup and every archived WAL segment";

interface RestoreSpec {
  kind: RestoreReport["kind"];
  target: string;
  /** pgbackrest restore's options beyond the data folder. */
  args: string[];
  /** Reads the restored cluster and compares it with what it must hold. */
  compare(sql: Sql): Promise<Pick<RestoreReport, "expected" | "restored" | "comparison">>;
  /** What a clean comparison shows, for the report line. */
  sameMeans: string;
}

function counts(expected: LedgerState, restored: LedgerState) {
  return {
    expected: { wallets: expected.wallets, events: expected.events },
    restored: { wallets: restored.wallets, events: restored.events },
  };
}

export function createDrill(options: DrillOptions): Drill {
  const { say } = options;
  const clusters: DrillCluster[] = [];
  /** The repository restored from; `ownRepo` when the drill made it (and removes it). */
  let repo: Pick<Repository, "command"> | undefined;
  let ownRepo: Repository | undefined;
  let service: DrillService | undefined;
  /** MASTER_KEY or MASTER_KEY_FILE for replay on a restored cluster. */
  let masterKeyEnv: Record<string, string> = {};
  /** A live source's max_connections and the like may exceed a new cluster's: no hot standby then. */
  let hotStandby = true;
  const steps: Record<string, number> = {};

  async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const result = await work();
    steps[name] = round2((performance.now() - started) / 1000);
    say(`${name}: ${steps[name]} s`);
    return result;
  }

  async function newCluster(role: string): Promise<DrillCluster> {
    const cluster = await createCluster(`drill_${role}_${Deno.pid}`);
    clusters.push(cluster);
    return cluster;
  }

  async function dropCluster(cluster: DrillCluster) {
    await cluster.drop();
    clusters.splice(clusters.indexOf(cluster), 1);
  }

  /** The source: a cluster archiving to a new repository, its stanza made and checked, migrated. */
  async function createSource(): Promise<{ source: DrillCluster; repo: Repository; sql: Sql }> {
    const source = await newCluster("source");
    const own = await createRepository({ pgPath: source.pgdata, pgPort: source.port });
    ownRepo = own;
    repo = own;
    // The deployment's archive settings, its archive_command pointed at the drill's repository.
    const deployed = await deployedArchiveSettings();
    if (!/^'pgbackrest --stanza=\S+ archive-push %p'$/.test(deployed.archive_command ?? "")) {
      throw new Error(`Unexpected archive_command ${deployed.archive_command} in ${POSTGRESQL_FILE}`);
    }
    await source.configure("archive", { ...deployed, archive_command: confString(own.archiveCommand) });
    await source.start();
    await createDatabase(source);
    await own.command(["stanza-create"]);
    await own.command(["check"]);
    const sql = source.connect(4);
    await migrate(sql);
    return { source, repo: own, sql };
  }

  async function databaseMb(sql: Sql): Promise<number> {
    const [{ bytes }] = await sql`select pg_database_size(current_database())::bigint as bytes`;
    return Math.round(Number(bytes) / 1024 / 1024);
  }

  /** Switches to a new WAL segment and waits until the archiver reports it archived; seconds. */
  async function archiveCurrentSegment(sql: Sql): Promise<number> {
    const started = performance.now();
    const [{ segment }] = await sql`select pg_walfile_name(pg_switch_wal()) as segment`;
    while (performance.now() - started < ARCHIVE_WAIT_MS) {
      const [{ archived }] =
        await sql`select coalesce(last_archived_wal, '') as archived from pg_stat_archiver`;
      if (archived >= segment) return round2((performance.now() - started) / 1000);
      await sleep(50);
    }
    throw new Error(`WAL segment ${segment} was not archived within ${ARCHIVE_WAIT_MS / 1000} s`);
  }

  /** Restores into a new cluster, waits for its promotion, checks it and drops it. */
  async function restoreAndCheck(spec: RestoreSpec): Promise<RestoreReport> {
    const { kind, target } = spec;
    say(`restoring the ${target} into a new cluster`);
    const cluster = await newCluster(kind === "latest" ? "latest" : "pitr");
    await emptyDataFolder(cluster);
    const restoreSeconds = await step(`${kind}: pgbackrest restore`, async () => {
      const started = performance.now();
      await repo!.command(["restore", `--pg1-path=${cluster.pgdata}`, ...spec.args]);
      return round2((performance.now() - started) / 1000);
    });
    // Never archive into the source's stanza (postgresql.auto.conf is read last, its last line wins).
    await Deno.writeTextFile(
      `${cluster.pgdata}/postgresql.auto.conf`,
      `archive_mode = 'off'\n${hotStandby ? "" : "hot_standby = 'off'\n"}`,
      { append: true },
    );
    const recoverySeconds = await step(`${kind}: start, WAL replay and promotion`, async () => {
      const started = performance.now();
      await cluster.start();
      await waitForPromotion(cluster, RECOVERY_TIMEOUT_MS);
      return round2((performance.now() - started) / 1000);
    });
    const sql = cluster.connect(2);
    try {
      const [{ at }] = await sql`select pg_last_xact_replay_timestamp() as at`;
      const recoveryLog = (await Deno.readTextFile(cluster.logFile)).split("\n")
        .filter((line) =>
          /recovery stopping|last completed transaction|redo done at|selected new timeline/.test(line)
        )
        .map((line) => line.replace(/^\S+ \S+ \S+ \[\d+\] /, ""));
      const { expected, restored, comparison } = await step(
        `${kind}: read and compare the ledger`,
        () => spec.compare(sql),
      );
      const env = { DATABASE_URL: cluster.url, ...masterKeyEnv };
      const audit = await step(`${kind}: deno task audit`, () => runCheckTask("audit", env));
      const replay = await step(`${kind}: deno task replay`, () => runCheckTask("replay", env));
      const report: RestoreReport = {
        kind,
        target,
        restoreSeconds,
        recoverySeconds,
        rtoSeconds: round2(restoreSeconds + recoverySeconds),
        reachedTransactionAt: at ? new Date(at).toISOString() : null,
        recoveryLog,
        expected,
        restored,
        comparison,
        audit,
        replay,
        ok: comparison.same && audit.clean && replay.clean,
      };
      say(
        `${kind}: ${
          report.ok ? "OK" : "FAILED"
        }: ${restored.wallets} wallets and ${restored.events} events ` +
          `(expected ${expected.wallets} and ${expected.events}), ` +
          `${comparison.same ? spec.sameMeans : comparison.samples.join("; ")}; ` +
          `last transaction replayed at ${report.reachedTransactionAt}; ${audit.summary}; ${replay.summary}`,
      );
      for (const line of recoveryLog) say(`${kind}: server: ${line}`);
      return report;
    } finally {
      await sql.end();
      await dropCluster(cluster);
    }
  }

  /** Compares a restored cluster with one state read on the source: exactly the same. */
  function sameAs(expected: LedgerState) {
    return async (sql: Sql) => {
      const restored = await readLedgerState(sql);
      return { ...counts(expected, restored), comparison: compareStates(expected, restored) };
    };
  }

  async function listedBackups(): Promise<BackupInfo[]> {
    const backups = await listBackups(repo!);
    for (const b of backups) {
      say(
        `backup ${b.label} (${b.type}): ${Math.round(b.size / 1024 / 1024)} MB of database, ` +
          `${Math.round(b.repoSize / 1024 / 1024)} MB stored, WAL ${b.walStart}..${b.walStop}`,
      );
    }
    return backups;
  }

  /**
   * The drill on a live database and its existing stanza: a restore point is made there (nothing
   * else is written); the latest backup and the point are restored into new clusters; a restore
   * must hold every wallet as of before its target and nothing the source did not have after it,
   * and each wallet's events must be the source's own, event for event.
   */
  async function runLiveDrill(live: LiveSource, version: string): Promise<DrillReport> {
    repo = {
      command: (args) =>
        runAsPostgres("pgbackrest", [`--config=${live.config}`, `--stanza=${live.stanza}`, ...args]),
    };
    masterKeyEnv = live.masterKeyEnv;
    hotStandby = false;
    const sql = connectUrl(live.url);
    try {
      const [{ major }] = await sql`select current_setting('server_version_num')::int / 10000 as major`;
      if (String(major) !== PG_VERSION) {
        throw new Error(
          `The source runs PostgreSQL ${major}: the drill restores into PostgreSQL ${PG_VERSION}`,
        );
      }
      const backups = await listedBackups();
      if (backups.length === 0) throw new Error(`Stanza "${live.stanza}" has no backup to restore`);
      const size = await databaseMb(sql);
      const [{ timeoutSeconds }] = await sql`
        select setting::int as "timeoutSeconds" from pg_settings where name = 'archive_timeout'`;
      say(`source: ${size} MB, archive_timeout ${timeoutSeconds} s`);
      const name = `drill_${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}`;
      const before = await readLedgerState(sql);
      const [point] = await sql`select pg_create_restore_point(${name})::text as lsn, now() as at`;
      const after = await readLedgerState(sql);
      say(
        `restore point "${name}" at ${point.lsn}: ${before.wallets} wallets and ${before.events} events before`,
      );
      const segmentArchivedSeconds = await step(
        "archive the current WAL segment",
        () => archiveCurrentSegment(sql),
      );
      const within = (lower: LedgerState, upper: () => Promise<LedgerState>) => async (restoredSql: Sql) => {
        const restored = await readLedgerState(restoredSql);
        const bounds = compareWithin(lower, await upper(), restored);
        const streams = await compareStreams(restoredSql, sql);
        return {
          ...counts(lower, restored),
          comparison: {
            same: bounds.same && streams.same,
            missing: bounds.missing + streams.missing,
            extra: bounds.extra,
            differing: bounds.differing + streams.differing,
            samples: [...bounds.samples, ...streams.samples].slice(0, 5),
          },
        };
      };
      const sameMeans = "every wallet as of the target and each stream the source's own, event for event";
      const restores = [
        await restoreAndCheck({
          kind: "latest",
          target: LATEST,
          args: [],
          compare: within(after, () => readLedgerState(sql)),
          sameMeans,
        }),
        await restoreAndCheck({
          kind: "pointInTime",
          target: `restore point "${name}"`,
          args: ["--type=name", `--target=${name}`, "--target-action=promote"],
          compare: within(before, () => Promise.resolve(after)),
          sameMeans,
        }),
      ];
      return {
        events: after.events,
        databaseMb: size,
        pgbackrest: version,
        backups,
        writes: null,
        restorePoint: { name, lsn: point.lsn, at: new Date(point.at).toISOString() },
        archive: { timeoutSeconds, segmentArchivedSeconds },
        steps,
        restores,
        ok: restores.every((r) => r.ok),
      };
    } finally {
      await sql.end().catch(() => {});
    }
  }

  async function runDrill(): Promise<DrillReport> {
    // A WAL segment is switched and archived at least this often while anything is written: with
    // the archive's own lag, it bounds the recovery point objective.
    const archiveTimeoutSeconds = settingSeconds((await deployedArchiveSettings()).archive_timeout ?? "0");
    const version = await step("tools", async () => {
      await ensureClusterTools();
      return await ensurePgbackrest();
    });
    say(version);
    if (options.live) return await runLiveDrill(options.live, version);
    say(`archive_timeout ${archiveTimeoutSeconds} s (src/deploy/pgbackrest-postgresql.conf)`);
    const { source, sql } = await step("source cluster, stanza-create and check", createSource);
    try {
      say(`source cluster ${source.name} on port ${source.port}, repository ${ownRepo!.dir}/repo`);
      const seeded = await step(
        `seed ${options.events} events`,
        () =>
          seedLedger(sql, options.events, (done) => {
            if (done % 200_000 === 0) say(`seeded ${done} events`);
          }),
      );
      const size = await databaseMb(sql);
      say(`source database: ${seeded.wallets} wallets, ${seeded.events} events, ${size} MB`);
      await step("full backup", () => repo!.command(["--type=full", "backup"]));
      service = startService(source.url);
      await step("service start", () => service!.process.start());
      const baseUrl = service.process.url;
      const tokens: string[] = [];
      for (let i = 0; i < SERVICE_WALLETS; i++) tokens.push(await newWallet(baseUrl));
      const beforeDiff = await billedWrites(baseUrl, tokens, WRITES_PER_WALLET, "a");
      await step("differential backup", () => repo!.command(["--type=diff", "backup"]));
      const afterDiff = await billedWrites(baseUrl, tokens, WRITES_PER_WALLET, "b");
      const atPoint = await readLedgerState(sql);
      const [point] = await sql`select pg_create_restore_point(${RESTORE_POINT})::text as lsn, now() as at`;
      say(`restore point "${RESTORE_POINT}" at ${point.lsn} (${new Date(point.at).toISOString()})`);
      const late = await newWallet(baseUrl);
      const afterPoint = await billedWrites(baseUrl, [...tokens, late], WRITES_PER_WALLET, "c");
      masterKeyEnv = { MASTER_KEY: service.masterKey };
      const atEnd = await readLedgerState(sql);
      await service.process.stop();
      const segmentArchivedSeconds = await step(
        "archive the last WAL segment",
        () => archiveCurrentSegment(sql),
      );
      const backups = await listedBackups();
      await sql.end();
      // The source is lost from here on: the restores rely on the repository alone.
      await source.stop();
      const sameMeans = "the same wallets, balances, versions and streams";
      const restores = [
        await restoreAndCheck({
          kind: "latest",
          target: LATEST,
          args: [],
          compare: sameAs(atEnd),
          sameMeans,
        }),
        await restoreAndCheck({
          kind: "pointInTime",
          target: `restore point "${RESTORE_POINT}"`,
          args: ["--type=name", `--target=${RESTORE_POINT}`, "--target-action=promote"],
          compare: sameAs(atPoint),
          sameMeans,
        }),
      ];
      return {
        events: seeded.events,
        databaseMb: size,
        pgbackrest: version,
        backups,
        writes: { beforeDiff, afterDiff, afterPoint, walletsAfterPoint: 1 },
        restorePoint: { name: RESTORE_POINT, lsn: point.lsn, at: new Date(point.at).toISOString() },
        archive: { timeoutSeconds: archiveTimeoutSeconds, segmentArchivedSeconds },
        steps,
        restores,
        ok: restores.every((r) => r.ok) && atPoint.wallets < atEnd.wallets,
      };
    } finally {
      await sql.end().catch(() => {});
    }
  }

  return {
    run: runDrill,
    serviceOutput: () => service?.process.output() ?? "",
    async cleanUp() {
      await service?.process.kill().catch(() => {});
      for (const cluster of [...clusters]) {
        await cluster.drop().catch((error) => say(`Cannot remove cluster ${cluster.name}: ${error}`));
      }
      clusters.length = 0;
      if (ownRepo) await Deno.remove(ownRepo.dir, { recursive: true }).catch(() => {});
    },
  };
}
