// Debian's Prometheus for the tests: the tasks' starter (src/tasks/prometheus_server.ts), and
// promtool run in the deploy folder.
import { PROMETHEUS_DIR } from "../../src/tasks/prometheus_server.ts";

export {
  ensurePrometheus,
  PROMETHEUS_DIR,
  type PrometheusServer,
  startPrometheus,
} from "../../src/tasks/prometheus_server.ts";

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
