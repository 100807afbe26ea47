// Debian's Prometheus for the tasks and tests that look at the service through it (`deno task
// cluster`, tests/metrics_prometheus_test.ts): installed with apt-get when missing, started on a
// spare port with the shipped scrape configuration (src/deploy/prometheus/), its targets and
// intervals replaced, the shipped rules loaded; PromQL through its HTTP API.
import { parse, stringify } from "yaml";

export const PROMETHEUS_DIR = new URL("../deploy/prometheus/", import.meta.url).pathname;

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

export interface PrometheusServer {
  url: string;
  /** The value of an instant PromQL query at `time` (ms; default now): its first series, if any. */
  query(promql: string, time?: number): Promise<number | undefined>;
  /** Every series of an instant query, by the value of `label`. */
  queryBy(promql: string, label: string, time?: number): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** host:port of each instance's metrics listener. */
  targets: string[];
  port: number;
  /** Scrape and evaluation interval (default 1 s). */
  intervalSeconds?: number;
}

export async function startPrometheus(options: PrometheusOptions): Promise<PrometheusServer> {
  await ensurePrometheus();
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
  const instant = async (promql: string, time?: number) => {
    const at = time === undefined ? "" : `&time=${time / 1000}`;
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}${at}`);
    const body = await res.json();
    if (body.status !== "success") throw new Error(`PromQL ${promql}: ${JSON.stringify(body)}`);
    return body.data.result as { metric: Record<string, string>; value: [number, string] }[];
  };
  return {
    url,
    async query(promql, time) {
      const [first] = await instant(promql, time);
      return first === undefined ? undefined : Number(first.value[1]);
    },
    async queryBy(promql, label, time) {
      const series = await instant(promql, time);
      return Object.fromEntries(series.map((s) => [s.metric[label] ?? "", Number(s.value[1])]));
    },
    stop,
  };
}
