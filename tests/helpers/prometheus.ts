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

export interface PrometheusServer {
  url: string;
  /** The value of an instant PromQL query (the first series; undefined when there is none). */
  query(promql: string): Promise<number | undefined>;
  stop(): Promise<void>;
}

/**
 * Starts Debian's Prometheus on a spare port with the shipped scrape configuration, its targets
 * replaced by `targets` and its intervals by `intervalSeconds`, the shipped rules loaded.
 */
export async function startPrometheus(
  options: { targets: string[]; port: number; intervalSeconds?: number },
) {
  await ensurePrometheus();
  const { parse, stringify } = await import("yaml");
  const shipped = parse(await Deno.readTextFile(`${PROMETHEUS_DIR}prometheus.yml`));
  const interval = `${options.intervalSeconds ?? 1}s`;
  shipped.global = { ...shipped.global, scrape_interval: interval, evaluation_interval: interval };
  shipped.rule_files = [`${PROMETHEUS_DIR}alerts.yml`];
  shipped.scrape_configs[0].static_configs = [{ targets: options.targets }];
  const dir = await Deno.makeTempDir({ prefix: "credit-api-prometheus-" });
  await Deno.writeTextFile(`${dir}/prometheus.yml`, stringify(shipped));
  const child = new Deno.Command("prometheus", {
    args: [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${options.port}`,
      "--log.level=warn",
    ],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let log = "";
  const pumping = (async () => {
    for await (const chunk of child.stderr) log = (log + new TextDecoder().decode(chunk)).slice(-20_000);
  })();
  const url = `http://127.0.0.1:${options.port}`;
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await pumping;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const deadline = performance.now() + 30_000;
  for (;;) {
    const ready = await fetch(`${url}/-/ready`).then((r) => (r.body?.cancel(), r.ok), () => false);
    if (ready) break;
    if (performance.now() > deadline) {
      await stop();
      throw new Error(`Prometheus did not start:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const server: PrometheusServer = {
    url,
    async query(promql) {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = await res.json();
      if (body.status !== "success") throw new Error(`PromQL ${promql}: ${JSON.stringify(body)}`);
      const first = body.data.result[0];
      return first === undefined ? undefined : Number(first.value[1]);
    },
    stop,
  };
  return server;
}
