// `deno task restore-drill` on a tiny database (2,000 seeded events and a few billed calls through
// the service): the point-in-time restore has exactly the wallets, balances and event streams of
// the restore point and nothing written after it, the latest restore has everything, audit and
// replay are clean on both, and nothing of the run is left behind. Needs Debian's postgresql-15 and
// pgbackrest (installed here when missing, as the task does); skipped only when they cannot be.
import assert from "node:assert/strict";
import { ensureClusterTools } from "../src/tasks/bench/cluster.ts";
import { ensurePgbackrest } from "../src/tasks/restore_drill/pgbackrest.ts";
import { compareStates, compareWithin, type LedgerState } from "../src/tasks/restore_drill/ledger_state.ts";
import type { DrillReport } from "../src/tasks/restore_drill/drill.ts";
import { confString, createCluster, createDatabase } from "../src/tasks/restore_drill/clusters.ts";
import { createRepository } from "../src/tasks/restore_drill/pgbackrest.ts";
import { billedWrites, newWallet, startService } from "../src/tasks/restore_drill/service_writes.ts";
import { migrate } from "../src/db/migrate.ts";
import { seedLedger } from "../src/tasks/bench/ledger_seed.ts";

const ROOT = new URL("../", import.meta.url).pathname;

const missing = await ensureClusterTools().then(() => ensurePgbackrest()).then(
  () => "",
  (error) => `${error instanceof Error ? error.message.split("\n")[0] : error}`,
);
if (missing) {
  console.log(`restore drill test skipped: pgbackrest or postgresql-15 cannot be installed (${missing})`);
}

/** Runs `deno task restore-drill`'s module with these variables: its report, output and pid. */
async function runDrill(env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "src/tasks/restore_drill.ts"],
    cwd: ROOT,
    env: { DRILL_TIME_LIMIT_S: "85", ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out = await child.output();
  const stdout = new TextDecoder().decode(out.stdout);
  const stderr = new TextDecoder().decode(out.stderr);
  const jsonLine = stdout.trim().split("\n").at(-1) ?? "";
  assert.equal(out.code, 0, `the drill failed:\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`);
  return { report: JSON.parse(jsonLine).restoreDrill as DrillReport, stdout, pid: child.pid };
}

/** Clusters still listed whose name ends with the drill's pid. */
async function clustersOf(pid: number) {
  const clusters = JSON.parse(
    new TextDecoder().decode(
      (await new Deno.Command("pg_lsclusters", { args: ["--json"], stdout: "piped" }).output()).stdout,
    ),
  ) as { cluster: string }[];
  return clusters.filter((c) => c.cluster.endsWith(`_${pid}`));
}

Deno.test({
  name: "restore drill: the point-in-time restore has exactly the state at the point, the latest has all" +
    (missing ? " (skipped: pgbackrest cannot be installed)" : ""),
  ignore: Boolean(missing),
  async fn() {
    const { report, stdout, pid } = await runDrill({ DRILL_EVENTS: "2000" });
    const writes = report.writes!;
    assert.equal(report.ok, true);
    assert.deepEqual(report.backups.map((b) => b.type), ["full", "diff"]);
    const latest = report.restores.find((r) => r.kind === "latest")!;
    const pitr = report.restores.find((r) => r.kind === "pointInTime")!;

    // The latest backup and the archived WAL: every wallet and event the source had at the end.
    assert.deepEqual(latest.comparison, { same: true, missing: 0, extra: 0, differing: 0, samples: [] });
    assert.deepEqual(latest.restored, latest.expected);
    // 2 seeded wallets and the service's 3 + 1 made after the point.
    assert.equal(latest.restored.wallets, 2 + 3 + writes.walletsAfterPoint);

    // The restore point: the state read on the source at the point, and not one write after it.
    assert.deepEqual(pitr.comparison, { same: true, missing: 0, extra: 0, differing: 0, samples: [] });
    assert.deepEqual(pitr.restored, pitr.expected);
    assert.equal(pitr.restored.wallets, latest.restored.wallets - writes.walletsAfterPoint);
    assert.ok(pitr.restored.events < latest.restored.events - writes.afterPoint);
    assert.ok(
      pitr.recoveryLog.some((line) => line.includes(`recovery stopping at restore point "drill_point"`)),
    );
    assert.ok(
      pitr.reachedTransactionAt! < report.restorePoint.at,
      "the last transaction replayed is before the point",
    );
    assert.ok(
      latest.reachedTransactionAt! > report.restorePoint.at,
      "the latest restore replays past the point",
    );

    for (const restore of report.restores) {
      assert.equal(restore.audit.clean, true, `${restore.kind} audit`);
      assert.equal(restore.replay.clean, true, `${restore.kind} replay`);
    }
    assert.ok(writes.beforeDiff > 0 && writes.afterDiff > 0 && writes.afterPoint > 0);

    // Nothing of the run is left: no cluster named after its process, no repository folder.
    assert.deepEqual(await clustersOf(pid), []);
    const repository = stdout.match(/repository (\S+)\/repo/)?.[1];
    assert.ok(repository, "the drill names its repository");
    await assert.rejects(Deno.stat(repository), Deno.errors.NotFound);
  },
});

Deno.test({
  name: "restore drill: on a live source that keeps writing, each restore holds the source's own events" +
    (missing ? " (skipped: pgbackrest cannot be installed)" : ""),
  ignore: Boolean(missing),
  async fn() {
    // A source as a deployment has it: archiving to its stanza, a full backup, the service writing.
    const source = await createCluster(`drilltest_${Deno.pid}`);
    let repoDir: string | undefined;
    let service: ReturnType<typeof startService> | undefined;
    let writing = true;
    let writer: Promise<number> | undefined;
    try {
      const repo = await createRepository({ pgPath: source.pgdata, pgPort: source.port });
      repoDir = repo.dir;
      await source.configure("archive", {
        archive_mode: "on",
        archive_command: confString(repo.archiveCommand),
        archive_timeout: "60s",
      });
      await source.start();
      await createDatabase(source);
      await repo.command(["stanza-create"]);
      const sql = source.connect(2);
      await migrate(sql);
      await seedLedger(sql, 2000);
      await repo.command(["--type=full", "backup"]);
      service = startService(source.url);
      await service.process.start();
      const url = service.process.url;
      const token = await newWallet(url);
      await billedWrites(url, { tokens: [token], calls: 3, tag: "before" });
      writer = (async () => {
        let n = 0;
        while (writing) {
          await billedWrites(url, { tokens: [token], calls: 1, tag: `during-${n++}` });
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
        return n;
      })();

      const { report, pid } = await runDrill({
        DRILL_SOURCE_URL: source.url,
        DRILL_PGBACKREST_CONFIG: repo.config,
        DRILL_STANZA: "drill",
        MASTER_KEY: service.masterKey,
      });
      writing = false;
      const during = await writer;
      assert.ok(during > 0, "the service wrote while the drill ran");
      assert.equal(report.ok, true);
      assert.equal(report.writes, null, "the drill wrote nothing but its restore point");
      assert.match(report.restorePoint.name, /^drill_\d{14}$/);
      for (const restore of report.restores) {
        assert.equal(
          restore.comparison.same,
          true,
          `${restore.kind}: ${restore.comparison.samples.join("; ")}`,
        );
        assert.equal(restore.audit.clean, true);
        assert.equal(restore.replay.clean, true);
        assert.equal(restore.restored.wallets, 3, `${restore.kind}: 2 seeded wallets and the service's`);
      }
      const pitr = report.restores.find((r) => r.kind === "pointInTime")!;
      assert.ok(
        pitr.recoveryLog.some((line) => line.includes(`restore point "${report.restorePoint.name}"`)),
      );
      // The source went on: it has more than the point-in-time copy, and the drill left it running.
      const [{ events }] = await sql`select count(*)::int as events from events`;
      assert.ok(
        events > pitr.restored.events,
        `${events} events on the source, ${pitr.restored.events} restored`,
      );
      await sql.end();
      assert.deepEqual(await clustersOf(pid), []);
      await Deno.stat(repo.dir); // the source's repository is not the drill's to remove
    } finally {
      writing = false;
      await writer?.catch(() => {});
      await service?.process.kill();
      await source.drop();
      if (repoDir) await Deno.remove(repoDir, { recursive: true });
    }
  },
});

function state(rows: [string, number, number][], events: number, streamsMd5 = "s"): LedgerState {
  return { wallets: rows.length, events, walletsMd5: JSON.stringify(rows), streamsMd5, rows };
}

Deno.test("restore drill: the comparison names a wallet missing, one too many and one with another balance", () => {
  const source = state([["a", 10, 3], ["b", 5, 2]], 5);
  assert.equal(compareStates(source, state([["a", 10, 3], ["b", 5, 2]], 5)).same, true);
  const later = compareStates(source, state([["a", 9, 4], ["b", 5, 2], ["c", 100, 2]], 8));
  assert.deepEqual(
    { same: later.same, missing: later.missing, extra: later.extra, differing: later.differing },
    { same: false, missing: 0, extra: 1, differing: 1 },
  );
  assert.match(later.samples.join("\n"), /wallet a: expected 10@3, restored 9@4/);
  assert.match(later.samples.join("\n"), /wallet c not expected/);
  assert.equal(compareStates(source, state([["a", 10, 3]], 3)).missing, 1);
  // Same wallets, but an event stream differs: not the same.
  assert.equal(compareStates(source, state([["a", 10, 3], ["b", 5, 2]], 5, "other")).same, false);
});

Deno.test("restore drill: on a live source, a restore must lie between the states read before and after its target", () => {
  const before = state([["a", 10, 3]], 3);
  const after = state([["a", 9, 4], ["b", 100, 2]], 6);
  assert.equal(compareWithin(before, after, state([["a", 10, 3]], 3)).same, true);
  assert.equal(compareWithin(before, after, state([["a", 9, 4], ["b", 100, 2]], 6)).same, true);
  const lost = compareWithin(before, after, state([["b", 100, 2]], 2));
  assert.deepEqual([lost.same, lost.missing], [false, 1]);
  const behind = compareWithin(before, after, state([["a", 10, 2]], 2));
  assert.deepEqual([behind.same, behind.differing], [false, 1]);
  assert.match(behind.samples[0], /wallet a at version 2, not within 3\.\.4/);
  const unknown = compareWithin(before, after, state([["a", 10, 3], ["z", 1, 1]], 4));
  assert.deepEqual([unknown.same, unknown.extra], [false, 1]);
  const ahead = compareWithin(before, after, state([["a", 8, 5]], 5));
  assert.deepEqual([ahead.same, ahead.differing], [false, 1]);
});
