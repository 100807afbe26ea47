// The backup deployment files of src/deploy/ as a user takes them: pgBackRest's own parser accepts
// pgbackrest.conf with the values meant, the systemd service and timer pass systemd-analyze verify,
// the service picks a full backup on Sundays and a differential one otherwise, and PostgreSQL's
// archive settings push to the deployed stanza. Needs pgbackrest (installed here when missing, as
// the restore drill does); the unit checks need systemd-analyze.
import assert from "node:assert/strict";
import { ensurePgbackrest } from "../src/tasks/restore_drill/pgbackrest.ts";
import {
  BACKUP_TIMER_FILE,
  BACKUP_UNIT_FILE,
  deployedArchiveSettings,
  deployedGlobalOptions,
  parseIni,
  PGBACKREST_FILE,
  settingSeconds,
} from "../src/tasks/restore_drill/deploy_settings.ts";
import { unitEntries } from "../src/tasks/cluster/deploy_files.ts";

async function command(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

const hasCommand = (name: string) => command("which", [name]).then((r) => r.code === 0, () => false);

const missing = await ensurePgbackrest().then(
  () => "",
  (error) => `${error instanceof Error ? error.message.split("\n")[0] : error}`,
);

/**
 * What pgbackrest makes of an option with this configuration file: `help <command> <option>`, the
 * command being one the option belongs to (for another, pgbackrest 2.45 runs the command itself).
 */
async function currentValue(config: string, option: string, includeDir: string) {
  const commandOf = option === "archive-async" ? "archive-push" : "backup";
  const out = await command("pgbackrest", [
    `--config=${config}`,
    `--config-include-path=${includeDir}`,
    "--stanza=credit-api",
    "help",
    commandOf,
    option,
  ]);
  return { ...out, current: out.stdout.match(/^current: (.+)$/m)?.[1] };
}

Deno.test({
  name: "deploy: pgbackrest parses pgbackrest.conf without a warning, with the values meant" +
    (missing ? ` (skipped: pgbackrest cannot be installed: ${missing})` : ""),
  ignore: Boolean(missing),
  async fn() {
    const dir = await Deno.makeTempDir();
    // No conf.d of this machine's (/etc/pgbackrest/conf.d) is read, nor the broken copies below.
    const includeDir = `${dir}/conf.d`;
    await Deno.mkdir(includeDir);
    try {
      const expected: Record<string, string> = {
        "repo1-type": "s3",
        "repo1-retention-full": "2",
        "repo1-cipher-type": "aes-256-cbc",
        "compress-type": "lz4",
        "process-max": "2",
        "start-fast": "true",
        "archive-async": "true",
        "pg1-path": "/var/lib/postgresql/15/main",
      };
      for (const [option, value] of Object.entries(expected)) {
        const out = await currentValue(PGBACKREST_FILE, option, includeDir);
        assert.equal(out.code, 0, out.stdout + out.stderr);
        assert.equal(out.stderr.trim(), "", `no warning for ${option}`);
        assert.equal(out.current, value, `${option}: ${out.stdout}`);
      }
      // The parse can fail: a misspelt option is warned about, a wrong value refused.
      const text = await Deno.readTextFile(PGBACKREST_FILE);
      await Deno.writeTextFile(`${dir}/misspelt.conf`, text.replace("process-max=", "proces-max="));
      assert.match(
        (await currentValue(`${dir}/misspelt.conf`, "process-max", includeDir)).stderr,
        /invalid option 'proces-max'/,
      );
      await Deno.writeTextFile(`${dir}/wrong.conf`, text.replace("compress-type=lz4", "compress-type=lz5"));
      const wrong = await currentValue(`${dir}/wrong.conf`, "compress-type", includeDir);
      assert.notEqual(wrong.code, 0);
      assert.match(wrong.stdout + wrong.stderr, /'lz5' is not allowed/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("deploy: PostgreSQL archives to the deployed stanza, and the drill keeps the deployed options", async () => {
  const settings = await deployedArchiveSettings();
  const stanzas = [...parseIni(await Deno.readTextFile(PGBACKREST_FILE)).keys()].filter((s) =>
    s !== "global"
  );
  assert.deepEqual(stanzas, ["credit-api"]);
  assert.equal(settings.archive_mode, "on");
  assert.equal(settings.archive_command, `'pgbackrest --stanza=${stanzas[0]} archive-push %p'`);
  assert.equal(settingSeconds(settings.archive_timeout), 60);
  // What the drill takes over: everything but where the repository, spool and logs are.
  const kept = Object.fromEntries(await deployedGlobalOptions());
  assert.deepEqual(Object.keys(kept).sort(), [
    "archive-async",
    "compress-type",
    "process-max",
    "repo1-retention-full",
    "repo1-retention-full-type",
    "start-fast",
  ]);
});

const systemdAnalyze = await hasCommand("systemd-analyze");

Deno.test({
  name: "deploy: the backup service and timer pass systemd-analyze verify" +
    (systemdAnalyze ? "" : " (skipped: systemd-analyze is not installed; Debian's package systemd)"),
  ignore: !systemdAnalyze,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const service = await Deno.readTextFile(BACKUP_UNIT_FILE);
      const timer = await Deno.readTextFile(BACKUP_TIMER_FILE);
      await Deno.writeTextFile(`${dir}/pgbackrest-backup@.service`, service);
      await Deno.writeTextFile(`${dir}/pgbackrest-backup@.timer`, timer);
      for (const suffix of ["service", "timer"]) {
        await Deno.symlink(
          `${dir}/pgbackrest-backup@.${suffix}`,
          `${dir}/pgbackrest-backup@credit-api.${suffix}`,
        );
      }
      const units = [
        `${dir}/pgbackrest-backup@credit-api.timer`,
        `${dir}/pgbackrest-backup@credit-api.service`,
      ];
      const verified = await command("systemd-analyze", ["verify", ...units]);
      assert.equal(verified.code, 0, verified.stderr);
      assert.equal(verified.stderr.trim(), "", "no warnings");
      const [calendar] = unitEntries(timer, "Timer").filter(([k]) => k === "OnCalendar").map(([, v]) => v);
      const next = await command("systemd-analyze", ["calendar", calendar]);
      assert.equal(next.code, 0, next.stderr);
      assert.match(next.stdout, /Next elapse: .* 01:30:00/);
      // The verification can fail: a calendar that is no date is reported.
      await Deno.writeTextFile(`${dir}/pgbackrest-backup@.timer`, timer.replace(calendar, "Caturday 01:30"));
      const broken = await command("systemd-analyze", ["verify", ...units]);
      assert.match(broken.stderr, /OnCalendar|calendar/i);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("deploy: the backup service runs a full backup on Sundays and a differential one otherwise", async () => {
  const service = unitEntries(await Deno.readTextFile(BACKUP_UNIT_FILE), "Service");
  assert.deepEqual(service.filter(([k]) => k === "User").map(([, v]) => v), ["postgres"]);
  const [execStart] = service.filter(([k]) => k === "ExecStart").map(([, v]) => v);
  // systemd's own unescaping of the line: %i is the instance, %% and $$ a single % and $.
  const line = execStart.replaceAll("%i", "credit-api").replaceAll("%%", "%").replaceAll("$$", "$");
  const script = line.match(/^\/bin\/sh -c '(.+)'$/)?.[1];
  assert.ok(script, `ExecStart runs a shell: ${execStart}`);
  const dir = await Deno.makeTempDir();
  try {
    // `date` answers the weekday asked for; pgbackrest is replaced by echo to show its arguments.
    const echoed = script.replace("exec /usr/bin/pgbackrest", "exec echo");
    const types: Record<string, string> = {};
    for (const weekday of ["1", "3", "6", "7"]) {
      await Deno.writeTextFile(`${dir}/date`, `#!/bin/sh\necho ${weekday}\n`, { mode: 0o755 });
      const out = await command("/bin/sh", ["-c", echoed], { PATH: `${dir}:${Deno.env.get("PATH")}` });
      assert.equal(out.code, 0, out.stderr);
      types[weekday] = out.stdout.trim();
    }
    assert.deepEqual(types, {
      "1": "--stanza=credit-api --type=diff backup",
      "3": "--stanza=credit-api --type=diff backup",
      "6": "--stanza=credit-api --type=diff backup",
      "7": "--stanza=credit-api --type=full backup",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
