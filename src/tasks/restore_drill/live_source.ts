// The drill on a live database and its existing pgBackRest stanza (DRILL_SOURCE_URL): only a
// restore point is written there. The latest backup and the point are restored into new clusters
// while the source keeps serving; a restore must hold every wallet as of before its target and
// nothing the source did not have after it, and each wallet's events must be the source's own,
// event for event. The source and its repository are left as they were.
import type { Sql } from "../../db/connect.ts";
import { PG_VERSION } from "../bench/cluster.ts";
import { connectUrl } from "./clusters.ts";
import { listBackups, runAsPostgres } from "./pgbackrest.ts";
import { compareStreams, compareWithin, type LedgerState, readLedgerState } from "./ledger_state.ts";
import { archiveCurrentSegment, databaseMb } from "./wal_archive.ts";
import { describeBackups, type DrillReport } from "./report.ts";
import { counts, type DrillContext, LATEST } from "./context.ts";

export interface LiveSource {
  /** The service's database (DRILL_SOURCE_URL); it must archive to the stanza below. */
  url: string;
  /** pgBackRest's configuration file and stanza of that database. */
  config: string;
  stanza: string;
  /** MASTER_KEY or MASTER_KEY_FILE, for replay. */
  masterKeyEnv: Record<string, string>;
}

/**
 * Compares a restored cluster with the source: between the states read before and after its
 * target (`upper` is read when the comparison runs), and each stream the source's own.
 */
function within(source: Sql, lower: LedgerState, upper: () => Promise<LedgerState>) {
  return async (restoredSql: Sql) => {
    const restored = await readLedgerState(restoredSql);
    const bounds = compareWithin(lower, await upper(), restored);
    const streams = await compareStreams(restoredSql, source);
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
}

export async function runLiveSourceDrill(
  ctx: DrillContext,
  live: LiveSource,
  version: string,
): Promise<DrillReport> {
  const { say, step } = ctx;
  const repo = {
    command: (args: string[]) =>
      runAsPostgres("pgbackrest", [`--config=${live.config}`, `--stanza=${live.stanza}`, ...args]),
  };
  const sql = connectUrl(live.url);
  try {
    const [{ major }] = await sql`select current_setting('server_version_num')::int / 10000 as major`;
    if (String(major) !== PG_VERSION) {
      throw new Error(
        `The source runs PostgreSQL ${major}: the drill restores into PostgreSQL ${PG_VERSION}`,
      );
    }
    const backups = describeBackups(say, await listBackups(repo));
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
    // WAL is fetched one segment at a time, without the asynchronous queue, lock and spool that the
    // source's archive-push may be using (restore itself takes no --archive-async).
    const noAsync = (pgdata: string) =>
      `--recovery-option=restore_command=pgbackrest --config=${live.config} --pg1-path=${pgdata} ` +
      `--stanza=${live.stanza} --archive-async=n archive-get %f "%p"`;
    const common = {
      repo,
      masterKeyEnv: live.masterKeyEnv,
      hotStandby: false,
      sameMeans: "every wallet as of the target and each stream the source's own, event for event",
    };
    const restores = [
      await ctx.restoreAndCheck({
        ...common,
        kind: "latest",
        target: LATEST,
        args: (pgdata) => [noAsync(pgdata)],
        compare: within(sql, after, () => readLedgerState(sql)),
      }),
      await ctx.restoreAndCheck({
        ...common,
        kind: "pointInTime",
        target: `restore point "${name}"`,
        args: (pgdata) => [noAsync(pgdata), "--type=name", `--target=${name}`, "--target-action=promote"],
        compare: within(sql, before, () => Promise.resolve(after)),
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
      steps: ctx.steps,
      restores,
      ok: restores.every((r) => r.ok),
    };
  } finally {
    await sql.end().catch(() => {});
  }
}
