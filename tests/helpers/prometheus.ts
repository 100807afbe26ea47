// Debian's Prometheus for the tests: promtool and the server, installed with apt-get when missing
// (as .ci/run installs it), and where the shipped configuration lives.
export const PROMETHEUS_DIR = new URL("../../src/deploy/prometheus/", import.meta.url).pathname;

async function found(tool: string): Promise<boolean> {
  const which = await new Deno.Command("sh", { args: ["-c", `command -v ${tool}`], stdout: "null" }).output();
  return which.success;
}

/** Makes sure `promtool` and `prometheus` are on the PATH; throws with apt-get's output when it cannot. */
export async function ensurePrometheus(): Promise<void> {
  if (await found("promtool") && await found("prometheus")) return;
  const install = await new Deno.Command("sh", {
    args: ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!install.success) {
    throw new Error(`apt-get install prometheus failed:\n${new TextDecoder().decode(install.stderr)}`);
  }
}

/** Runs promtool with `args` in the deploy folder; answers its exit and its output. */
export async function promtool(...args: string[]): Promise<{ success: boolean; output: string }> {
  const run = await new Deno.Command("promtool", {
    args,
    cwd: PROMETHEUS_DIR,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const text = new TextDecoder();
  return { success: run.success, output: text.decode(run.stdout) + text.decode(run.stderr) };
}
