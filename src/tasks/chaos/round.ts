// One round of `deno task chaos`: under the client load, Postgres is restarted, then stopped for
// 20 s, then the service is killed with SIGKILL and started again. Afterwards the load is settled
// and checked (src/tasks/chaos/verify.ts) and the audit and replay run on the database.
import type { Cluster } from "./cluster.ts";
import type { ServiceProcess } from "./service_process.ts";
import { type Answer, type RunningLoad, startLoad } from "./load.ts";
import { balanceOf, verifyLoad } from "./verify.ts";

export const POSTGRES_STOP_MS = 20_000;
const WARM_UP_MS = 2_000;
/** Load after a recovery, before the next fault. */
const AFTER_RECOVERY_MS = 3_000;
/** A fault the service has not recovered from by then is reported as never recovered. */
const RECOVERY_TIMEOUT_MS = 60_000;
const CALL_TIMEOUT_MS = 10_000;
/** The contract for answers while the database is out. */
const ANSWER_BOUND_MS = 2_000;

const ROOT = new URL("../../../", import.meta.url).pathname;

export interface FaultFigures {
  postgresRestart: number | null;
  postgresStopped: number | null;
  serviceKilled: number | null;
}

export interface RoundReport {
  round: number;
  acknowledgedWrites: number;
  lostWrites: number;
  /** Answers with a 5xx status other than 503. */
  serverErrors: number;
  /** 503 answers (each with Retry-After unless counted in serverErrors). */
  unavailable: number;
  /** How long the slowest 503 took, and the 99th percentile, in milliseconds. */
  unavailableMaxMs: number;
  unavailableP99Ms: number;
  /** Calls that got no answer: the service was down (kill -9) or past the client's timeout. */
  noAnswer: number;
  /** Answers (200 or 503) that took longer than 2 s. */
  slowAnswers: number;
  /** Wallets whose spending did not match their calls (charged twice, or for nothing). */
  wrongCharges: number;
  /** Seconds from the end of each fault (Postgres accepting again, the service started) to a 200 write. */
  recoverySeconds: FaultFigures;
  /** Seconds without any write answered 200 around each fault, as the clients saw it. */
  outageSeconds: FaultFigures;
  serviceCrashes: number;
  audit: "clean" | string;
  replay: "clean" | string;
}

export interface RoundContext {
  cluster: Cluster;
  service: ServiceProcess;
  tokens: string[];
  databaseEnv: Record<string, string>;
  /** Progress lines. */
  say(line: string): void;
}

type Fault = keyof FaultFigures;

export async function runRound(round: number, context: RoundContext): Promise<RoundReport> {
  const { cluster, service, tokens, say } = context;
  const crashesBefore = service.crashes;
  const baselines = [];
  for (const token of tokens) baselines.push(await balanceOf(service.url, token));
  const load = startLoad({ baseUrl: service.url, tokens, callTimeoutMs: CALL_TIMEOUT_MS });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const began = {} as Record<Fault, number>;
  const ended = {} as Record<Fault, number>;
  const recoverySeconds = {} as FaultFigures;
  /** Runs a fault; `end` says when it is over (Postgres accepting, the service started). */
  async function fault(name: Fault, line: string, act: () => Promise<number>) {
    say(line);
    began[name] = performance.now();
    ended[name] = await act();
    recoverySeconds[name] = await recovery(load, ended[name]);
    await sleep(AFTER_RECOVERY_MS);
  }

  await sleep(WARM_UP_MS);
  await fault("postgresRestart", "restarting Postgres", async () => {
    await cluster.restart();
    return performance.now();
  });
  await fault("postgresStopped", `stopping Postgres for ${POSTGRES_STOP_MS / 1000} s`, async () => {
    await cluster.stop();
    await sleep(POSTGRES_STOP_MS);
    await cluster.start();
    return performance.now();
  });
  await fault("serviceKilled", "killing the service (SIGKILL) and starting it again", async () => {
    await service.kill();
    const restartedAt = performance.now();
    await service.start();
    return restartedAt;
  });

  const answers = await load.stop();
  say(`settling ${answers.length} calls`);
  const verdict = await verifyLoad(
    { baseUrl: service.url, tokens, callTimeoutMs: CALL_TIMEOUT_MS },
    answers,
    baselines,
  );
  return {
    round,
    acknowledgedWrites: verdict.acknowledged,
    lostWrites: verdict.lost.length,
    serverErrors: answers.filter((a) => a.status >= 500 && a.status !== 503).length,
    unavailable: answers.filter((a) => a.status === 503).length,
    ...latencyOf(answers.filter((a) => a.status === 503)),
    noAnswer: answers.filter((a) => a.status === 0).length,
    slowAnswers: answers.filter((a) => a.status !== 0 && a.ms > ANSWER_BOUND_MS).length,
    wrongCharges: verdict.wrongCharges.length,
    recoverySeconds,
    outageSeconds: {
      postgresRestart: writeGap(answers, began.postgresRestart, ended.postgresRestart),
      postgresStopped: writeGap(answers, began.postgresStopped, ended.postgresStopped),
      serviceKilled: writeGap(answers, began.serviceKilled, ended.serviceKilled),
    },
    serviceCrashes: service.crashes - crashesBefore,
    audit: await task("audit", context.databaseEnv),
    replay: await task("replay", context.databaseEnv),
  };
}

/** Seconds from `since` until a write was answered 200, or null if none within the timeout. */
async function recovery(load: RunningLoad, since: number): Promise<number | null> {
  const deadline = since + RECOVERY_TIMEOUT_MS;
  let checked = 0;
  while (performance.now() < deadline) {
    const answers: Answer[] = load.answers;
    for (; checked < answers.length; checked++) {
      const answer = answers[checked];
      const answeredAt = answer.at + answer.ms;
      if (answer.kind === "write" && answer.status === 200 && answeredAt >= since) {
        return seconds(answeredAt - since);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return null;
}

/** The longest time without a write answered 200 while the fault lasted (from `from` to `to`). */
function writeGap(answers: Answer[], from: number, to: number): number | null {
  const done = answers.filter((a) => a.kind === "write" && a.status === 200).map((a) => a.at + a.ms)
    .sort((a, b) => a - b);
  let longest: number | null = null;
  for (let i = 1; i < done.length; i++) {
    if (done[i] < from || done[i - 1] > to) continue;
    longest = Math.max(longest ?? 0, done[i] - done[i - 1]);
  }
  return longest === null ? null : seconds(longest);
}

const seconds = (ms: number) => Math.round(ms / 10) / 100;

function latencyOf(answers: Answer[]): { unavailableMaxMs: number; unavailableP99Ms: number } {
  const sorted = answers.map((a) => a.ms).sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0);
  return { unavailableMaxMs: at(1), unavailableP99Ms: at(0.99) };
}

/** Runs `deno task audit` or `deno task replay` on the database; "clean" or what it reported. */
export async function task(name: "audit" | "replay", env: Record<string, string>): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", name],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.success) return "clean";
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return `exit ${out.code}: ${text.trim().split("\n").slice(-3).join(" | ")}`;
}
