// What metrics cost billed throughput (issue 26: at most 3%): the same service with METRICS_PORT set
// takes the paired rounds beside the measured one (metrics off), on the same database and wallets,
// while a scraper reads its /metrics every second (Prometheus' usual interval is 15 s: this is the
// heavy side). The cost is 1 minus the median of the per-round throughput ratios, on and off.
import type { Round } from "./service_load.ts";
import { freePort } from "./system.ts";

/** The bound on the cost of metrics to billed throughput. */
export const METRICS_COST_TARGET = 0.03;
const SCRAPE_EVERY_MS = 1_000;

/** The environment of the metrics-on contender, and its scrape loop (stop it when its service stops). */
export function metricsOnService(): { env: Record<string, string>; scrape(): () => Promise<void> } {
  const port = freePort();
  return {
    env: { METRICS_PORT: String(port) },
    scrape() {
      let stopped = false;
      const loop = (async () => {
        while (!stopped) {
          await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => "");
          await new Promise((r) => setTimeout(r, SCRAPE_EVERY_MS));
        }
      })();
      return async () => {
        stopped = true;
        await loop;
      };
    },
  };
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The paired ratios of the rounds and the cost line; undefined when no round had the contender. */
export function metricsCost(rounds: Round[]) {
  if (!rounds[0]?.metricsOnGet) return undefined;
  const ratios = (side: "get" | "post") =>
    rounds.map((r) => round3((side === "get" ? r.metricsOnGet! : r.metricsOnPost!).rate / r[side].rate));
  const [get, post] = [ratios("get"), ratios("post")];
  const cost = { get: round3(1 - median(get)), post: round3(1 - median(post)) };
  const worst = Math.max(cost.get, cost.post);
  const verdict = worst <= METRICS_COST_TARGET ? "met" : "missed";
  const line = `metrics on (METRICS_PORT, scraped every second) against off, paired within each round: GET ` +
    `${median(get)} (rounds ${get.join(", ")}), POST ${median(post)} (rounds ${post.join(", ")}); cost GET ` +
    `${round3(cost.get * 100)}%, POST ${round3(cost.post * 100)}% (target: at most ${
      METRICS_COST_TARGET * 100
    }%, ${verdict})`;
  return { line, json: { get: median(get), post: median(post), getRounds: get, postRounds: post, cost } };
}
