// The deployment files of src/deploy/ as a user takes them: HAProxy's configuration is valid for
// Debian's haproxy (installed here when missing, as the cluster task does), the systemd unit passes
// systemd-analyze verify, and the container file, the compose file, the unit and the environment
// file agree with each other and with the service's configuration rules.
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { parseConfig } from "../src/config.ts";
import {
  DEPLOY_DIR,
  ENV_FILE,
  HAPROXY_FILE,
  haproxyConfig,
  instanceEnvironment,
  serviceCommand,
  UNIT_FILE,
  unitEntries,
} from "../src/tasks/cluster/deploy_files.ts";
import { ensureHaproxy } from "../src/tasks/cluster/haproxy.ts";

const ROOT = new URL("../", import.meta.url).pathname;

async function command(cmd: string, args: string[]) {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

const hasCommand = (name: string) => command("which", [name]).then((r) => r.code === 0, () => false);

/** The flags of `deno task serve`: every deployment runs the service as it does. */
async function serveArgs(): Promise<string[]> {
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
  return tasks.serve.split(/\s+/).slice(1);
}

Deno.test("deploy: haproxy -c accepts haproxy.cfg as it is and as the cluster task fills it in", async () => {
  await ensureHaproxy();
  const asIs = await command("haproxy", ["-c", "-f", HAPROXY_FILE]);
  assert.equal(asIs.code, 0, asIs.stdout + asIs.stderr);
  const dir = await Deno.makeTempDir();
  try {
    const text = await Deno.readTextFile(HAPROXY_FILE);
    const filled = haproxyConfig(text, { port: 18080, servers: [18081, 18082], socket: `${dir}/s.sock` });
    assert.match(filled, /bind 127\.0\.0\.1:18080\n/);
    assert.match(filled, /server app1 127\.0\.0\.1:18081\n\s+server app2 127\.0\.0\.1:18082\n/);
    assert.doesNotMatch(filled, /app3|8083/);
    await Deno.writeTextFile(`${dir}/filled.cfg`, filled);
    const checked = await command("haproxy", ["-c", "-f", `${dir}/filled.cfg`]);
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
    // The check can fail: a misspelt keyword is refused.
    await Deno.writeTextFile(`${dir}/broken.cfg`, text.replace("balance roundrobin", "balance roundrobbin"));
    assert.notEqual((await command("haproxy", ["-c", "-f", `${dir}/broken.cfg`])).code, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // Round robin, /readyz checked, and the client address never taken from the client.
  const text = await Deno.readTextFile(HAPROXY_FILE);
  for (const line of ["balance roundrobin", "http-check send meth GET uri /readyz", "check inter"]) {
    assert.ok(text.includes(line), `haproxy.cfg has "${line}"`);
  }
  assert.match(text, /http-request set-header X-Forwarded-For %\[src\]/);
});

const systemdAnalyze = await hasCommand("systemd-analyze");

Deno.test({
  name: "deploy: the systemd unit passes systemd-analyze verify and runs the service as `deno task serve`" +
    (systemdAnalyze ? "" : " (skipped: systemd-analyze is not installed; Debian's package systemd)"),
  ignore: !systemdAnalyze,
  async fn() {
    const text = await Deno.readTextFile(UNIT_FILE);
    const service = unitEntries(text, "Service");
    const value = (key: string) => service.filter(([k]) => k === key).map(([, v]) => v);
    assert.deepEqual(value("Restart"), ["on-failure"]);
    assert.deepEqual(value("EnvironmentFile"), ["/etc/credit-api/env"]);
    assert.deepEqual(value("KillSignal"), ["SIGTERM"]);
    const { binary, args } = await serviceCommand();
    assert.deepEqual(args, await serveArgs());
    // This machine's paths for the binary, the checkout and the environment file; the rest as is.
    const dir = await Deno.makeTempDir();
    try {
      const local = text.replace(`ExecStart=${binary}`, `ExecStart=${Deno.execPath()}`)
        .replace("WorkingDirectory=/opt/credit-api", `WorkingDirectory=${ROOT}`)
        .replace("EnvironmentFile=/etc/credit-api/env", `EnvironmentFile=${ENV_FILE}`);
      await Deno.writeTextFile(`${dir}/credit-api@.service`, local);
      await Deno.symlink(`${dir}/credit-api@.service`, `${dir}/credit-api@1.service`);
      const verified = await command("systemd-analyze", ["verify", `${dir}/credit-api@1.service`]);
      assert.equal(verified.code, 0, verified.stderr);
      assert.equal(verified.stderr.trim(), "", "no warnings");
      // The verification can fail: a wrong Restart= value is reported.
      await Deno.writeTextFile(`${dir}/credit-api@.service`, local.replace("=on-failure", "=on-fail"));
      const broken = await command("systemd-analyze", ["verify", `${dir}/credit-api@1.service`]);
      assert.match(broken.stderr, /restart specifier/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("deploy: the environment file and the unit's per-instance variables are a valid configuration", async () => {
  const env = await instanceEnvironment();
  const unit = unitEntries(await Deno.readTextFile(UNIT_FILE), "Service")
    .filter(([key]) => key === "Environment").flatMap(([, v]) => v.split(/\s+/))
    .map((pair) => pair.replace("%i", "1").split("=")) as [string, string][];
  const config = parseConfig({ ...env, ...Object.fromEntries(unit) });
  assert.ok(!("error" in config), "error" in config ? config.error : "");
  assert.equal(config.port, 8081);
  assert.equal(config.smtpPort, 2521);
  assert.equal(config.trustProxy, true);
  assert.ok(config.shutdownDrainMs >= 3000, "the drain outlasts HAProxy's two failed checks a second apart");
  const servers = (await Deno.readTextFile(HAPROXY_FILE)).match(/server app1 127\.0\.0\.1:(\d+)/);
  assert.equal(Number(servers?.[1]), config.port, "haproxy.cfg's app1 is instance 1's port");
});

/** The Containerfile's instructions: name and the rest of the line. */
async function containerfile(): Promise<[string, string][]> {
  const text = await Deno.readTextFile(`${DEPLOY_DIR}Containerfile`);
  return text.split("\n").filter((line) => line.trim() && !line.startsWith("#"))
    .map((line) => [line.split(" ")[0], line.slice(line.indexOf(" ") + 1)]);
}

Deno.test("deploy: the Containerfile runs the service as the unit does, from files that exist", async () => {
  const lines = await containerfile();
  const get = (name: string) => lines.filter(([n]) => n === name).map(([, rest]) => rest);
  const pinned = (await Deno.readTextFile(`${ROOT}README.md`)).match(/deno@(\d+\.\d+\.\d+)/)?.[1];
  assert.deepEqual(get("FROM"), [`docker.io/denoland/deno:${pinned}`]);
  assert.deepEqual(JSON.parse(get("CMD")[0]), ["deno", ...(await serviceCommand()).args]);
  for (const copy of get("COPY")) {
    const sources = copy.split(/\s+/).filter((word) => !word.startsWith("--")).slice(0, -1);
    for (const source of sources) await Deno.stat(`${ROOT}${source}`); // throws when missing
  }
  const env = Object.fromEntries(get("ENV")[0].split(/\s+/).map((pair) => pair.split("=")));
  const config = parseConfig(env);
  assert.ok(!("error" in config), "error" in config ? config.error : "");
  assert.deepEqual(get("EXPOSE")[0].split(/\s+/).map(Number), [config.port, config.smtpPort]);
});

Deno.test("deploy: compose.yaml builds the Containerfile and points the service at its Postgres", async () => {
  const file = `${DEPLOY_DIR}compose.yaml`;
  const compose = parseYaml(await Deno.readTextFile(file));
  const { api, postgres } = compose.services;
  const context = new URL(`${api.build.context}/`, `file://${DEPLOY_DIR}`).pathname;
  assert.equal(context, ROOT);
  assert.equal(`${context}${api.build.dockerfile}`, `${DEPLOY_DIR}Containerfile`);
  const url = new URL(api.environment.DATABASE_URL);
  assert.equal(url.hostname, "postgres");
  assert.equal(decodeURIComponent(url.username), postgres.environment.POSTGRES_USER);
  assert.equal(decodeURIComponent(url.password), postgres.environment.POSTGRES_PASSWORD);
  assert.equal(url.pathname, `/${postgres.environment.POSTGRES_DB}`);
  assert.equal(api.depends_on.postgres.condition, "service_healthy");
  assert.ok(postgres.healthcheck.test.join(" ").includes("pg_isready"));
  const image = Object.fromEntries(
    (await containerfile()).filter(([n]) => n === "ENV")[0][1].split(/\s+/).map((pair) => pair.split("=")),
  );
  const config = parseConfig({ ...image, ...api.environment });
  assert.ok(!("error" in config), "error" in config ? config.error : "");
  assert.deepEqual(api.ports, [`${config.port}:${config.port}`, `${config.smtpPort}:${config.smtpPort}`]);
  assert.ok(compose.volumes["postgres-data"] !== undefined || "postgres-data" in compose.volumes);
  // Where a compose implementation is installed, it must accept the file too (not on this machine).
  if ((await command("docker", ["compose", "version"]).catch(() => ({ code: 1 }))).code === 0) {
    const checked = await command("docker", ["compose", "-f", file, "config", "-q"]);
    assert.equal(checked.code, 0, checked.stderr);
  }
});
