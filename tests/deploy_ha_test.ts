// The highly available layout's deployment files (src/deploy/ha/) as a user takes them: the node
// agent's systemd unit passes systemd-analyze verify, the setup script is valid shell and uses only
// options pg_autoctl documents for each command (its own --help; Debian's pg-auto-failover-cli,
// installed when missing as `deno task ha` does), the monitor's settings are those the task
// measures, and the service's environment, with both nodes in DATABASE_URL, is a valid configuration.
import assert from "node:assert/strict";
import { parseConfig } from "../src/config.ts";
import { ENV_FILE, parseEnvironmentFile, unitEntries } from "../src/tasks/cluster/deploy_files.ts";
import { ensureHaTools } from "../src/tasks/ha/tools.ts";
import { MONITOR_SETTINGS, NETWORK_PARTITION_SECONDS } from "../src/tasks/ha/settings.ts";

const HA_DIR = new URL("../src/deploy/ha/", import.meta.url).pathname;

async function command(cmd: string, args: string[]) {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

const systemdAnalyze = await command("which", ["systemd-analyze"]).then((r) => r.code === 0, () => false);
/** Why pg_auto_failover's packages are missing (they cannot be installed here), or "" when they are there. */
const noTools = await ensureHaTools().then(() => "", (error) => String(error).split("\n")[0]);
if (noTools) console.log(`SKIPPED: pg_auto_failover's tests need its packages: ${noTools}`);

Deno.test({
  name: "deploy ha: the pg_autoctl unit passes systemd-analyze verify and runs `pg_autoctl run` as postgres" +
    (systemdAnalyze ? "" : " (skipped: systemd-analyze is not installed; Debian's package systemd)"),
  ignore: !systemdAnalyze || noTools !== "",
  async fn() {
    const text = await Deno.readTextFile(`${HA_DIR}pgautofailover.service`);
    const service = unitEntries(text, "Service");
    const value = (key: string) => service.filter(([k]) => k === key).map(([, v]) => v);
    assert.deepEqual(value("ExecStart"), ["/usr/bin/pg_autoctl run"]);
    assert.deepEqual(value("User"), ["postgres"]);
    assert.deepEqual(value("Restart"), ["always"]);
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/pgautofailover.service`, text);
      const verified = await command("systemd-analyze", ["verify", `${dir}/pgautofailover.service`]);
      assert.equal(verified.code, 0, verified.stderr);
      // The verification can fail: a wrong Restart= value is reported.
      await Deno.writeTextFile(`${dir}/pgautofailover.service`, text.replace("= always", "= alway"));
      const broken = await command("systemd-analyze", ["verify", `${dir}/pgautofailover.service`]);
      assert.match(broken.stderr, /restart specifier/i);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** The `--option`s of each `pg_autoctl create <what>` call in the script. */
function createOptions(script: string): Map<string, string[]> {
  const calls = new Map<string, string[]>();
  for (
    const match of script.matchAll(/pg_autoctl create (\w+)((?: \\\n\s+--[\w-]+(?: "[^"]*"| [^\s\\]+)?)+)/g)
  ) {
    calls.set(match[1], [...match[2].matchAll(/--[\w-]+/g)].map((m) => m[0]));
  }
  return calls;
}

Deno.test({
  name: "deploy ha: node-setup.sh is valid shell and uses only the options pg_autoctl documents" +
    (noTools ? ` (skipped: ${noTools})` : ""),
  ignore: noTools !== "",
}, async () => {
  const file = `${HA_DIR}node-setup.sh`;
  const syntax = await command("sh", ["-n", file]);
  assert.equal(syntax.code, 0, syntax.stderr);
  const calls = createOptions(await Deno.readTextFile(file));
  assert.deepEqual([...calls.keys()].sort(), ["monitor", "postgres"]);
  for (const [what, options] of calls) {
    const help = await command("pg_autoctl", ["create", what, "--help"]);
    const documented = new Set(
      [...(help.stdout + help.stderr).matchAll(/^\s+(--[\w-]+)/gm)].map((m) => m[1]),
    );
    assert.ok(documented.size > 5, `pg_autoctl create ${what} --help lists its options`);
    for (const option of options) assert.ok(documented.has(option), `pg_autoctl create ${what} ${option}`);
    // The check can fail: an option pg_autoctl does not have is caught.
    assert.ok(!documented.has("--pg-port"));
  }
  assert.ok(calls.get("postgres")!.includes("--monitor"));
  assert.ok(calls.get("postgres")!.includes("--dbname"));
});

Deno.test("deploy ha: monitor.conf holds the failure detection settings that deno task ha measures", async () => {
  const text = await Deno.readTextFile(`${HA_DIR}monitor.conf`);
  const settings = Object.fromEntries(
    text.split("\n").filter((line) => line.trim() && !line.startsWith("#"))
      .map((line) => line.split("=").map((part) => part.trim())),
  );
  assert.deepEqual(settings, MONITOR_SETTINGS);
  // A primary cut off from the monitor stops itself before its standby may be promoted.
  const script = await Deno.readTextFile(`${HA_DIR}node-setup.sh`);
  const partition = Number(script.match(/timeout\.network_partition_timeout (\d+)/)?.[1]);
  assert.equal(partition, NETWORK_PARTITION_SECONDS);
  const demote = settings["pgautofailover.primary_demote_timeout"].match(/^(\d+)s$/);
  assert.ok(demote && Number(demote[1]) > partition, "primary_demote_timeout > network_partition_timeout");
});

Deno.test("deploy ha: the service's environment names both nodes and is a valid configuration", async () => {
  const env = parseEnvironmentFile(await Deno.readTextFile(`${HA_DIR}credit-api.env`));
  const config = parseConfig({ ...env, PORT: "8081", SMTP_PORT: "2521" });
  assert.ok(!("error" in config), "error" in config ? config.error : "");
  const url = env.DATABASE_URL;
  assert.match(url, /@[^/]+:\d+,[^/]+:\d+\//, "two host:port pairs");
  assert.match(url, /[?&]target_session_attrs=read-write(&|$)/);
  // Everything else as the single-database deployment's environment.
  const single = parseEnvironmentFile(await Deno.readTextFile(ENV_FILE));
  for (const [key, value] of Object.entries(single)) {
    if (key !== "DATABASE_URL") assert.equal(env[key], value, key);
  }
});
