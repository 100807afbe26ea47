// The drill on a source of its own: a cluster archiving its WAL to a new pgBackRest repository with
// the deployed settings, seeded with the bench's seeder and written to through the service; a full
// and a differential backup; a named restore point with more writes after it. The source is then
// stopped (lost), and the latest backup and the point are restored and must equal, wallet for
// wallet and event for event, the states read on the source at the end and at the point.
import type { Sql } from "../../db/connect.ts";
import { migrate } from "../../db/migrate.ts";
import { seedLedger } from "../bench/ledger_seed.ts";
import { confString, createDatabase, type DrillCluster } from "./clusters.ts";
import { createRepository, listBackups, type Repository } from "./pgbackrest.ts";
import { readLedgerState } from "./ledger_state.ts";
import { billedWrites, newWallet, startService } from "./service_writes.ts";
import { deployedArchiveSettings, POSTGRESQL_FILE, settingSeconds } from "./deploy_settings.ts";
import { archiveCurrentSegment, databaseMb } from "./wal_archive.ts";
import { describeBackups, type DrillReport } from "./report.ts";
import { type DrillContext, LATEST, sameAs } from "./context.ts";

/** The name of the drill's restore point (pg_create_restore_point). */
export const RESTORE_POINT = "drill_point";
/** Service wallets written to, and billed writes per wallet in each of the three write rounds. */
const SERVICE_WALLETS = 3;
const WRITES_PER_WALLET = 5;

/** The source: a cluster archiving to a new repository, its stanza made and checked, migrated. */
async function createSource(
  ctx: DrillContext,
): Promise<{ source: DrillCluster; repo: Repository; sql: Sql }> {
  const source = await ctx.newCluster("source");
  const repo = await createRepository({ pgPath: source.pgdata, pgPort: source.port });
  ctx.attach({ remove: () => Deno.remove(repo.dir, { recursive: true }) });
  // The deployment's archive settings, its archive_command pointed at the drill's repository.
  const deployed = await deployedArchiveSettings();
  if (!/^'pgbackrest --stanza=\S+ archive-push %p'$/.test(deployed.archive_command ?? "")) {
    throw new Error(`Unexpected archive_command ${deployed.archive_command} in ${POSTGRESQL_FILE}`);
  }
  await source.configure("archive", { ...deployed, archive_command: confString(repo.archiveCommand) });
  await source.start();
  await createDatabase(source);
  await repo.command(["stanza-create"]);
  await repo.command(["check"]);
  const sql = source.connect(4);
  await migrate(sql);
  return { source, repo, sql };
}

export async function runOwnSourceDrill(
  ctx: DrillContext,
  events: number,
  version: string,
): Promise<DrillReport> {
  const { say, step } = ctx;
  // A WAL segment is switched and archived at least this often while anything is written: with
  // the archive's own lag, it bounds the recovery point objective.
  const archiveTimeoutSeconds = settingSeconds((await deployedArchiveSettings()).archive_timeout ?? "0");
  say(`archive_timeout ${archiveTimeoutSeconds} s (src/deploy/pgbackrest-postgresql.conf)`);
  const { source, repo, sql } = await step(
    "source cluster, stanza-create and check",
    () => createSource(ctx),
  );
  try {
    say(`source cluster ${source.name} on port ${source.port}, repository ${repo.dir}/repo`);
    const seeded = await step(`seed ${events} events`, () =>
      seedLedger(sql, events, (done) => {
        if (done % 200_000 === 0) say(`seeded ${done} events`);
      }));
    const size = await databaseMb(sql);
    say(`source database: ${seeded.wallets} wallets, ${seeded.events} events, ${size} MB`);
    await step("full backup", () => repo.command(["--type=full", "backup"]));
    const service = startService(source.url);
    ctx.attach({ stop: () => service.process.kill(), output: () => service.process.output() });
    await step("service start", () => service.process.start());
    const baseUrl = service.process.url;
    const tokens: string[] = [];
    for (let i = 0; i < SERVICE_WALLETS; i++) tokens.push(await newWallet(baseUrl));
    const beforeDiff = await billedWrites(baseUrl, { tokens, calls: WRITES_PER_WALLET, tag: "a" });
    await step("differential backup", () => repo.command(["--type=diff", "backup"]));
    const afterDiff = await billedWrites(baseUrl, { tokens, calls: WRITES_PER_WALLET, tag: "b" });
    const atPoint = await readLedgerState(sql);
    const [point] = await sql`select pg_create_restore_point(${RESTORE_POINT})::text as lsn, now() as at`;
    say(`restore point "${RESTORE_POINT}" at ${point.lsn} (${new Date(point.at).toISOString()})`);
    const late = await newWallet(baseUrl);
    const afterPoint = await billedWrites(baseUrl, {
      tokens: [...tokens, late],
      calls: WRITES_PER_WALLET,
      tag: "c",
    });
    const atEnd = await readLedgerState(sql);
    await service.process.stop();
    const segmentArchivedSeconds = await step(
      "archive the last WAL segment",
      () => archiveCurrentSegment(sql),
    );
    const backups = describeBackups(say, await listBackups(repo));
    await sql.end();
    // The source is lost from here on: the restores rely on the repository alone.
    await source.stop();
    const common = {
      repo,
      masterKeyEnv: { MASTER_KEY: service.masterKey },
      hotStandby: true,
      sameMeans: "the same wallets, balances, versions and streams",
    };
    const restores = [
      await ctx.restoreAndCheck({
        ...common,
        kind: "latest",
        target: LATEST,
        args: () => [],
        compare: sameAs(atEnd),
      }),
      await ctx.restoreAndCheck({
        ...common,
        kind: "pointInTime",
        target: `restore point "${RESTORE_POINT}"`,
        args: () => ["--type=name", `--target=${RESTORE_POINT}`, "--target-action=promote"],
        compare: sameAs(atPoint),
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
      steps: ctx.steps,
      restores,
      ok: restores.every((r) => r.ok) && atPoint.wallets < atEnd.wallets,
    };
  } finally {
    await sql.end().catch(() => {});
  }
}
