// The rounds of `deno task ha`: under the KV load through HAProxy, one fault of pg_auto_failover's
// layout, then the wait until it is whole again (a primary and a synchronous secondary), then the
// load judged (src/tasks/chaos/verify.ts) and the audit and replay run on the primary of the moment.
import type { HaLayout } from "./layout.ts";
import { HA_DATABASE } from "./settings.ts";
import type { Haproxy } from "../cluster/haproxy.ts";
import type { Instance } from "../cluster/instances.ts";
import { type Answer, startLoad } from "../chaos/load.ts";
import { balanceOf, verifyLoad } from "../chaos/verify.ts";
import { task } from "../chaos/round.ts";
import { NO_SYNC_STANDBY } from "../../db/standby_watch.ts";
import type { Traffic } from "./traffic.ts";

export const ROUND_KINDS = ["kill9", "nodeStop", "switchover", "standbyLost"] as const;
export type RoundKind = typeof ROUND_KINDS[number];

const BEFORE_MS = 3_000;
const AFTER_MS = 3_000;
const CALL_TIMEOUT_MS = 10_000;
/** Longest the layout may take to be whole again after a round's fault. */
const SETTLE_MS = 180_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface RoundContext {
  layout: HaLayout;
  haproxy: Haproxy;
  instances: Instance[];
  tokens: string[];
  balances: number[];
  masterKey: string;
  traffic: Traffic;
  say(line: string): void;
}

export interface RoundFigures {
  kind: RoundKind;
  round: number;
  /** Wall-clock window of the round (Date.now()), for the cron and mail figures. */
  from: number;
  to: number;
  primaryBefore: string;
  primaryAfter: string;
  acknowledged: number;
  lost: number;
  wrongCharges: number;
  /** First answer other than 200 after the fault to the first write served after it; 0 if none. */
  secondsWithoutService: number;
  /** From the fault to the first write served on the new primary (failover rounds). */
  secondsToWrites: number;
  answers503: number;
  /** 503 without Retry-After (an HAProxy with no instance ready and no http-error rule). */
  bare503: number;
  /** 5xx other than 503, by status and phrase. */
  other5xx: number;
  other5xxByStatus: Record<string, number>;
  noAnswer: number;
  /** standbyLost: seconds until /readyz of an instance said the standby was gone; -1 if never. */
  readyzNoticedSeconds?: number;
  audit: string;
  replay: string;
}

export async function runRound(kind: RoundKind, round: number, context: RoundContext): Promise<RoundFigures> {
  const { layout, say } = context;
  const from = Date.now();
  const before = await layout.settled(SETTLE_MS);
  const load = startLoad({
    baseUrl: context.haproxy.url,
    tokens: context.tokens,
    callTimeoutMs: CALL_TIMEOUT_MS,
  });
  await sleep(BEFORE_MS);
  const faultAt = performance.now();
  let readyzNoticedSeconds: number | undefined;
  say(`round ${round} ${kind}: primary ${before.primary.name}, secondary ${before.secondary.name}`);
  if (kind === "kill9") {
    const pid = await before.primary.killPostmaster();
    say(`  kill -9 of ${before.primary.name}'s postmaster (${pid}); its agent starts it again`);
  } else if (kind === "nodeStop") {
    await before.primary.killAll();
    say(`  ${before.primary.name} lost: kill -9 of its pg_autoctl agent and every Postgres process`);
    await layout.waitStates(
      "the standby promoted",
      SETTLE_MS,
      (states) =>
        states.some((s) =>
          s.name === before.secondary.name && ["wait_primary", "primary"].includes(s.reported)
        ),
    );
    await writesServedAfter(load.answers, faultAt, SETTLE_MS);
    say(`  ${before.secondary.name} promoted; ${before.primary.name}'s agent started again (it rejoins)`);
    before.primary.startAgent();
  } else if (kind === "switchover") {
    await layout.autoctl(["perform", "switchover", "--pgdata", before.primary.pgdata, "--wait", "120"]);
    say(`  pg_autoctl perform switchover done`);
  } else {
    await before.secondary.killAll();
    say(`  ${before.secondary.name} lost: kill -9 of its agent and every Postgres process`);
    await layout.waitStates(
      "the primary alone",
      SETTLE_MS,
      (states) => states.some((s) => s.name === before.primary.name && s.reported === "wait_primary"),
    );
    readyzNoticedSeconds = await readyzNotices(context.instances, faultAt, 30_000);
    say(`  the primary went on alone (wait_primary); /readyz said so after ${readyzNoticedSeconds} s`);
    await sleep(AFTER_MS);
    before.secondary.startAgent();
  }
  await writesServedAfter(load.answers, faultAt, SETTLE_MS);
  const after = await layout.settled(SETTLE_MS);
  await sleep(AFTER_MS);
  const answers = await load.stop();
  const verdict = await verifyLoad(
    { baseUrl: context.haproxy.url, tokens: context.tokens, callTimeoutMs: CALL_TIMEOUT_MS },
    answers,
    context.balances,
  );
  // The next round's baselines are the balances now.
  for (let i = 0; i < context.tokens.length; i++) {
    context.balances[i] = await balanceOf(context.haproxy.url, context.tokens[i]);
  }
  const other = [...answers, ...verdict.unexpected].filter((a) => a.status >= 500 && a.status !== 503);
  const env = {
    DATABASE_URL: `postgres://postgres@127.0.0.1:${after.primary.port}/${HA_DATABASE}`,
    MASTER_KEY: context.masterKey,
  };
  const figures: RoundFigures = {
    kind,
    round,
    from,
    to: Date.now(),
    primaryBefore: before.primary.name,
    primaryAfter: after.primary.name,
    acknowledged: verdict.acknowledged,
    lost: verdict.lost.length,
    wrongCharges: verdict.wrongCharges.length,
    ...outage(answers, faultAt),
    answers503: answers.filter((a) => a.status === 503 && a.retryAfter).length,
    bare503: answers.filter((a) => a.status === 503 && !a.retryAfter).length,
    other5xx: other.length,
    other5xxByStatus: byStatus(other),
    noAnswer: answers.filter((a) => a.status === 0).length,
    ...(readyzNoticedSeconds === undefined ? {} : { readyzNoticedSeconds }),
    ...await auditAndReplay(env, context.traffic),
  };
  // The window runs to the next round's start: the mails and minutes of the audit's pause count too.
  figures.to = Date.now();
  return figures;
}

function byStatus(answers: Answer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const key = `${a.status}${a.retryAfter ? "" : " " + a.phrase.slice(0, 40).replace(/\s+/g, " ")}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/**
 * The audit and the replay on a quiet database: the mail paused, and away from a minute's
 * schedule run, so that nothing is written between the live tables and the log they are checked
 * against (the replay compares whole days of usage).
 */
async function auditAndReplay(env: Record<string, string>, traffic: Traffic) {
  traffic.pause();
  try {
    const untilMinute = 60_000 - (Date.now() % 60_000);
    await sleep(untilMinute < 20_000 ? untilMinute + 8_000 : 3_000);
    return { audit: await task("audit", env), replay: await task("replay", env) };
  } finally {
    traffic.resume();
  }
}

/**
 * Seconds without service: the longest stretch from an answer other than 200 to the next write
 * served (each stretch from its first failure; one never ended counts to the last answer), and
 * from the fault to the first write served after the last failure.
 */
export function outage(
  answers: Answer[],
  faultAt: number,
): { secondsWithoutService: number; secondsToWrites: number } {
  const after = answers.filter((a) => a.at >= faultAt).sort((a, b) => a.at - b.at);
  const seconds = (ms: number) => Math.round(ms / 100) / 10;
  let longest = 0;
  let failingSince: number | undefined;
  let lastServed: number | undefined;
  for (const a of after) {
    if (a.status !== 200) {
      failingSince ??= a.at;
    } else if (a.kind === "write") {
      if (failingSince !== undefined) longest = Math.max(longest, a.at + a.ms - failingSince);
      failingSince = undefined;
      lastServed = a.at + a.ms;
    }
  }
  if (failingSince !== undefined) {
    longest = Math.max(longest, Math.max(...after.map((a) => a.at + a.ms)) - failingSince);
  }
  const anyFailure = after.some((a) => a.status !== 200);
  return {
    secondsWithoutService: seconds(longest),
    secondsToWrites: anyFailure && failingSince === undefined && lastServed !== undefined
      ? seconds(firstServedAfterLastFailure(after) - faultAt)
      : 0,
  };
}

function firstServedAfterLastFailure(after: Answer[]): number {
  const lastFailure = after.filter((a) => a.status !== 200).at(-1)!;
  const served = after.find((a) => a.kind === "write" && a.status === 200 && a.at >= lastFailure.at)!;
  return served.at + served.ms;
}

async function writesServedAfter(answers: Answer[], since: number, withinMs: number) {
  const deadline = performance.now() + withinMs;
  while (!answers.some((a) => a.kind === "write" && a.status === 200 && a.at >= since)) {
    if (performance.now() > deadline) throw new Error(`No write served within ${withinMs} ms`);
    await sleep(100);
  }
}

/** Seconds from `since` until an instance's /readyz names the missing standby; -1 past `withinMs`. */
async function readyzNotices(instances: Instance[], since: number, withinMs: number): Promise<number> {
  while (performance.now() - since < withinMs) {
    for (const instance of instances) {
      const text = await fetch(`http://127.0.0.1:${instance.httpPort}/readyz`).then((r) => r.text()).catch(
        () => "",
      );
      if (text.includes(NO_SYNC_STANDBY)) return Math.round((performance.now() - since) / 100) / 10;
    }
    await sleep(200);
  }
  return -1;
}
