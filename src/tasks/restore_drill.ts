// `deno task restore-drill`: proves the backups by restoring them. A source PostgreSQL cluster of
// its own (pg_createcluster on a spare port) archives its WAL to a pgBackRest repository; it is
// seeded with DRILL_EVENTS events (default 1,000,000) and written to through the service; a full
// and a differential backup are taken, a restore point is named and more is written after it. Then
// the latest backup and the restore point are each restored into a new cluster, promoted, and
// checked with `deno task audit`, `deno task replay` and a comparison of every wallet with the
// source at that moment. Prints the time of each step and the recovery point reached, and one JSON
// line; exits 1 if a check failed. Needs Debian's postgresql-15 and pgbackrest (installed when
// missing); removes every cluster and the repository at the end, on failure and on Ctrl-C too.
// With DRILL_SOURCE_URL it drills a live database instead: its existing stanza (DRILL_STANZA,
// default credit-api, in DRILL_PGBACKREST_CONFIG, default /etc/pgbackrest/pgbackrest.conf) is
// restored as it is, and only a restore point is written to the source.
import { createDrill } from "./restore_drill/drill.ts";

const EVENTS = Number(Deno.env.get("DRILL_EVENTS") ?? 1_000_000);
/** The whole drill is bounded: past this it stops and removes everything. */
const TIME_LIMIT_MS = Number(Deno.env.get("DRILL_TIME_LIMIT_S") ?? 900) * 1000;

if (!Number.isInteger(EVENTS) || EVENTS < 1000 || EVENTS > 100_000_000) {
  console.error(`Invalid DRILL_EVENTS "${Deno.env.get("DRILL_EVENTS")}": must be 1000 to 100000000`);
  Deno.exit(1);
}
if (!(TIME_LIMIT_MS >= 60_000)) {
  console.error(`Invalid DRILL_TIME_LIMIT_S "${Deno.env.get("DRILL_TIME_LIMIT_S")}": must be 60 or more`);
  Deno.exit(1);
}

function say(line: string) {
  console.log(`restore-drill: ${line}`);
}

const SOURCE_URL = Deno.env.get("DRILL_SOURCE_URL");
const live = SOURCE_URL
  ? {
    url: SOURCE_URL,
    config: Deno.env.get("DRILL_PGBACKREST_CONFIG") ?? "/etc/pgbackrest/pgbackrest.conf",
    stanza: Deno.env.get("DRILL_STANZA") ?? "credit-api",
    // Replay on the restored copy opens the sealed fields with the service's own master key.
    masterKeyEnv: Object.fromEntries(
      ["MASTER_KEY", "MASTER_KEY_FILE"].flatMap((name) => {
        const value = Deno.env.get(name);
        return value === undefined ? [] : [[name, value]];
      }),
    ),
  }
  : undefined;

const drill = createDrill({ events: EVENTS, live, say });

let stopping: string | undefined;

/**
 * Stops the drill: the command in progress is ended, the run fails at once and its clean-up
 * removes everything; should that hang, everything is removed from here after 30 s.
 */
function stop(reason: string) {
  if (stopping) return;
  stopping = reason;
  say(`${reason}: stopping, removing the clusters and the repository`);
  drill.abort();
  setTimeout(async () => {
    await drill.cleanUp();
    Deno.exit(1);
  }, 30_000);
}

for (const signal of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(signal, () => stop(signal));

const timer = setTimeout(
  () => stop(`not done within ${TIME_LIMIT_MS / 1000} s (DRILL_TIME_LIMIT_S)`),
  TIME_LIMIT_MS,
);

try {
  const started = performance.now();
  const report = await drill.run();
  await drill.cleanUp();
  const seconds = Math.round((performance.now() - started) / 1000);
  for (const r of report.restores) {
    say(
      `${r.kind}: RTO ${r.rtoSeconds} s (restore ${r.restoreSeconds} s, WAL replay to promotion ` +
        `${r.recoverySeconds} s), recovery point reached: last transaction at ${r.reachedTransactionAt}; ` +
        `audit ${r.audit.clean ? "clean" : "MISMATCH"} in ${r.audit.seconds.toFixed(1)} s, ` +
        `replay ${r.replay.clean ? "clean" : "DIFFERENT"} in ${r.replay.seconds.toFixed(1)} s`,
    );
  }
  say(`${report.ok ? "PASS" : "FAIL"} in ${seconds} s`);
  const { restores, ...rest } = report;
  console.log(JSON.stringify({
    restoreDrill: {
      ...rest,
      seconds,
      restores: restores.map((r) => ({
        ...r,
        audit: { clean: r.audit.clean, seconds: Math.round(r.audit.seconds * 100) / 100 },
        replay: { clean: r.replay.clean, seconds: Math.round(r.replay.seconds * 100) / 100 },
      })),
    },
  }));
  clearTimeout(timer);
  Deno.exit(report.ok ? 0 : 1);
} catch (error) {
  console.error(
    `restore-drill: ${stopping ? `stopped (${stopping}): ` : ""}${
      error instanceof Error ? error.stack : error
    }`,
  );
  const output = drill.output();
  if (output) console.error(`service output (last lines):\n${output.slice(-3000)}`);
  await drill.cleanUp();
  clearTimeout(timer);
  Deno.exit(stopping?.startsWith("SIG") ? 130 : 1);
}
