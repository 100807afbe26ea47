// A rolling restart under load: each instance in turn gets SIGTERM, drains (HAProxy's health check
// takes it out while it still serves), exits, starts again and waits until HAProxy has it back.
// The load is chaos's: writes with an Idempotency-Key, each read back; every answer must be a 200,
// and afterwards every acknowledged write reads back and every wallet is charged exactly.
import type { Haproxy } from "./haproxy.ts";
import type { Instance } from "./instances.ts";
import type { Check } from "./checks_limits.ts";
import { startLoad } from "../chaos/load.ts";
import { balanceOf, verifyLoad } from "../chaos/verify.ts";
import { sleep } from "../bench/system.ts";

const CALL_TIMEOUT_MS = 10_000;
const BETWEEN_RESTARTS_MS = 2_000;

export interface Restart {
  instance: string;
  /** Seconds from SIGTERM until HAProxy had taken it out, until it exited, until it was back. */
  outAfter: number | null;
  exitedAfter: number;
  backAfter: number;
}

const seconds = (since: number) => Math.round((performance.now() - since) / 10) / 100;

async function restartOne(haproxy: Haproxy, instance: Instance): Promise<Restart> {
  const signalled = performance.now();
  let outAfter: number | null = null;
  const stopped = instance.process.stop();
  const watch = (async () => {
    let exited = false;
    stopped.then(() => (exited = true));
    while (!exited && outAfter === null) {
      const stat = (await haproxy.stats().catch(() => [])).find((s) => s.name === instance.name);
      if (stat && !stat.status.startsWith("UP")) outAfter = seconds(signalled);
      else await sleep(50);
    }
  })();
  await stopped;
  await watch;
  const exitedAfter = seconds(signalled);
  await instance.process.start();
  await haproxy.waitFor([instance.name], (status) => status === "UP");
  return { instance: instance.name, outAfter, exitedAfter, backAfter: seconds(signalled) };
}

export async function rollingRestart(haproxy: Haproxy, instances: Instance[], tokens: string[]) {
  const baselines = [];
  for (const token of tokens) baselines.push(await balanceOf(haproxy.url, token));
  const load = startLoad({ baseUrl: haproxy.url, tokens, callTimeoutMs: CALL_TIMEOUT_MS });
  const restarts: Restart[] = [];
  await sleep(BETWEEN_RESTARTS_MS);
  for (const instance of instances) {
    restarts.push(await restartOne(haproxy, instance));
    await sleep(BETWEEN_RESTARTS_MS);
  }
  const answers = await load.stop();
  const verdict = await verifyLoad(
    { baseUrl: haproxy.url, tokens, callTimeoutMs: CALL_TIMEOUT_MS },
    answers,
    baselines,
  );
  const failed = answers.filter((a) => a.status !== 200);
  const figures = {
    clients: tokens.length,
    requests: answers.length,
    served: answers.length - failed.length,
    failed: failed.length,
    failedExamples: failed.slice(0, 5).map((a) => `${a.status} ${a.phrase}`.slice(0, 120)),
    lostWrites: verdict.lost.length,
    wrongCharges: verdict.wrongCharges.length,
    restarts,
  };
  const ok = figures.failed === 0 && figures.lostWrites === 0 && figures.wrongCharges === 0 &&
    restarts.every((r) => r.outAfter !== null && r.outAfter < r.exitedAfter);
  const line = `rolling restart: ${tokens.length} clients, ${figures.requests} requests, ` +
    `${figures.served} served, ${figures.failed} failed, ${figures.lostWrites} writes lost, ` +
    `${figures.wrongCharges} wallets charged wrongly; per instance (s after SIGTERM: out of HAProxy, ` +
    `exited, back in): ${
      restarts.map((r) => `${r.instance} ${r.outAfter}/${r.exitedAfter}/${r.backAfter}`).join(", ")
    }`;
  return { ok, line, figures } satisfies Check<typeof figures>;
}
