// The restore drill's runner: times each step, makes the clusters a backup is restored into and
// checks each restore (promotion, recovery point reached, comparison with the source, audit and
// replay); the source is one the drill builds (own_source.ts) or a live database (live_source.ts).
// Whatever the drill made is removed by cleanUp, on failure too.
import { ensureClusterTools } from "../bench/cluster.ts";
import { createCluster, type DrillCluster, emptyDataFolder, waitForPromotion } from "./clusters.ts";
import { ensurePgbackrest, stopRunningCommands } from "./pgbackrest.ts";
import { runCheckTask } from "./checks.ts";
import { type DrillReport, type RestoreReport, round2 } from "./report.ts";
import type { Attached, DrillContext, RestoreSpec } from "./context.ts";
import { type LiveSource, runLiveSourceDrill } from "./live_source.ts";
import { runOwnSourceDrill } from "./own_source.ts";

export type { DrillReport, RestoreReport } from "./report.ts";
export type { LiveSource } from "./live_source.ts";

/** A restored cluster's recovery is bounded. */
const RECOVERY_TIMEOUT_MS = 300_000;

export interface DrillOptions {
  /** Events the seeder writes before the first backup (own source). */
  events: number;
  /** A live source instead of one built by the drill: its existing pgBackRest stanza is restored. */
  live?: LiveSource;
  say(line: string): void;
}

export interface Drill {
  run(): Promise<DrillReport>;
  /** Stops the run: the command in progress is ended and no further step starts (run() rejects). */
  abort(): void;
  /** Stops what the drill started and removes what it made; safe to call again. */
  cleanUp(): Promise<void>;
  /** The last output lines of what the drill ran (the service), for a failure report. */
  output(): string;
}

export function createDrill(options: DrillOptions): Drill {
  const { say } = options;
  const clusters: DrillCluster[] = [];
  const attached: Attached[] = [];
  const steps: Record<string, number> = {};
  let aborted = false;
  let cleaning: Promise<void> | undefined;

  async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
    if (aborted) throw new Error(`Stopped before "${name}"`);
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

  /** Restores into a new cluster, waits for its promotion, checks it and drops it. */
  async function restoreAndCheck(spec: RestoreSpec): Promise<RestoreReport> {
    const { kind, target } = spec;
    say(`restoring the ${target} into a new cluster`);
    const cluster = await newCluster(kind === "latest" ? "latest" : "pitr");
    await emptyDataFolder(cluster);
    const restoreSeconds = await step(`${kind}: pgbackrest restore`, async () => {
      const started = performance.now();
      await spec.repo.command(["restore", `--pg1-path=${cluster.pgdata}`, ...spec.args(cluster.pgdata)]);
      return round2((performance.now() - started) / 1000);
    });
    const autoConf = `${cluster.pgdata}/postgresql.auto.conf`;
    for (const line of (await Deno.readTextFile(autoConf)).split("\n")) {
      if (/^(restore_command|recovery_target)/.test(line)) say(`${kind}: ${line}`);
    }
    // Never archive into the source's stanza (postgresql.auto.conf is read last, its last line wins).
    await Deno.writeTextFile(
      autoConf,
      `archive_mode = 'off'\n${spec.hotStandby ? "" : "hot_standby = 'off'\n"}`,
      { append: true },
    );
    const recoverySeconds = await step(`${kind}: start, WAL replay and promotion`, async () => {
      const started = performance.now();
      await cluster.start().catch(async (error) => {
        const log = await Deno.readTextFile(cluster.logFile).catch(() => "");
        throw new Error(
          `${error instanceof Error ? error.message : error}\nserver log:\n${log.slice(-2000)}`,
        );
      });
      await waitForPromotion(cluster, RECOVERY_TIMEOUT_MS, () => aborted);
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
      const env = { DATABASE_URL: cluster.url, ...spec.masterKeyEnv };
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

  async function removeEverything() {
    const resources = attached.splice(0);
    for (const resource of resources) {
      await resource.stop?.().catch((error) => say(`Cannot stop: ${error}`));
    }
    for (const cluster of clusters.splice(0)) {
      await cluster.drop().catch((error) => say(`Cannot remove cluster ${cluster.name}: ${error}`));
    }
    for (const resource of resources) {
      await resource.remove?.().catch((error) => say(`Cannot remove: ${error}`));
    }
  }

  const context: DrillContext = {
    say,
    step,
    steps,
    newCluster,
    attach: (resource) => attached.push(resource),
    restoreAndCheck,
  };

  return {
    async run() {
      const version = await step("tools", async () => {
        await ensureClusterTools();
        return await ensurePgbackrest();
      });
      say(version);
      return options.live
        ? await runLiveSourceDrill(context, options.live, version)
        : await runOwnSourceDrill(context, options.events, version);
    },
    abort() {
      aborted = true;
      stopRunningCommands();
    },
    output: () => attached.map((resource) => resource.output?.() ?? "").join(""),
    cleanUp() {
      cleaning ??= removeEverything();
      return cleaning;
    },
  };
}
