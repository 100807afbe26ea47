// /openapi.json passes an independent linter, @redocly/cli (pinned in deno.json), with no error.
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";

const REDOCLY = "npm:@redocly/cli@2.77.0";
const CONFIG = new URL("./redocly.yaml", import.meta.url).pathname;

async function lint(file: string): Promise<{ code: number; report: any; output: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", REDOCLY, "lint", file, "--config", CONFIG, "--format", "json"],
    env: { REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const output = stdout + new TextDecoder().decode(out.stderr);
  return { code: out.code, report: JSON.parse(stdout.slice(stdout.indexOf("{"))), output };
}

Deno.test("redocly lint finds no error in the served document, and does find a broken one", async () => {
  const svc = await inProcessService();
  const dir = await Deno.makeTempDir({ prefix: "openapi-lint-" });
  try {
    const document = JSON.parse((await svc.request("GET", "/openapi.json")).text);
    await Deno.writeTextFile(`${dir}/openapi.json`, JSON.stringify(document));
    const served = await lint(`${dir}/openapi.json`);
    const errors = served.report.problems.filter((p: any) => p.severity === "error");
    assert.deepEqual(errors.map((p: any) => `${p.ruleId}: ${p.message}`), [], served.output.slice(-4000));
    assert.equal(served.code, 0);
    assert.equal(served.report.totals.errors, 0);

    // The linter can fail: an operation without security, and no servers.
    const broken = structuredClone(document);
    delete broken.paths["/token"].get.security;
    delete broken.servers;
    await Deno.writeTextFile(`${dir}/broken.json`, JSON.stringify(broken));
    const refused = await lint(`${dir}/broken.json`);
    assert.notEqual(refused.code, 0);
    const rules = refused.report.problems.map((p: any) => p.ruleId);
    assert.ok(rules.includes("security-defined") && rules.includes("no-empty-servers"), rules.join(" "));
  } finally {
    await svc.close();
    await Deno.remove(dir, { recursive: true });
  }
});
