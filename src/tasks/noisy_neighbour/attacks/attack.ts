// What every attack is: set up, then run beside the victim until stopped, then report what its
// clients saw. Also the loop its clients share: repeat until stopped, each call bounded in time.
import { type Answer, type AnswerTally, countAnswer, newTally } from "../tally.ts";
import type { ApiAnswer } from "../api.ts";

/** Plain data (it crosses into a worker): where the service is and who the attacker is. */
export interface AttackContext {
  url: string;
  smtpPort: number;
  /** A wallet funded with 1,000,000 credits. */
  attacker: { token: string; from: string };
  /** A wallet at 0 credits, for refused calls. */
  zero: { token: string; from: string };
}

export interface AttackOutcome {
  tally: AnswerTally;
  notes: string[];
  /** A scoped key's spend against its cap (attack 7). */
  key?: { spent: number; cap: number };
}

export interface RunningAttack {
  /** Stops the clients, undoes what must not outlive the attack, and reports. */
  stop(): Promise<AttackOutcome>;
}

/** Sets up and starts an attack; resolves once it runs at full strength. */
export type Attack = (context: AttackContext) => Promise<RunningAttack>;

/** A client's call takes at most this long; longer counts as no answer. */
export const CALL_TIMEOUT_MS = 20_000;
/** After stop, clients get this long to finish the call they are in before it is cut. */
const STOP_GRACE_MS = 3_000;

/** The tally's view of an HTTP answer. */
export function httpAnswer(answer: ApiAnswer): Answer {
  return { status: answer.status, cost: answer.cost, retryAfter: answer.retryAfter };
}

export const NO_ANSWER: Answer = { status: "network", cost: null, retryAfter: false };
/** A call still waiting for its answer when the attack stopped, and cut. */
const CUT_AT_STOP: Answer = { status: "cut at stop", cost: null, retryAfter: false };

export interface ClientLoops {
  tally: AnswerTally;
  /** Aborts with the stop (after a grace) or the call's own timeout. */
  signal(): AbortSignal;
  stop(): Promise<void>;
}

/**
 * `clients` loops each calling `once(client, signal)` until stopped; `once` answers what the tally
 * counts (undefined: nothing). Errors count as no answer, calls cut by the stop as such.
 */
export function clientLoops(
  clients: number,
  once: (client: number, signal: AbortSignal) => Promise<Answer | undefined>,
): ClientLoops {
  const tally = newTally();
  const cut = new AbortController();
  let stopping = false;
  const signal = () => AbortSignal.any([cut.signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]);
  const loop = async (client: number) => {
    while (!stopping) {
      try {
        const answer = await once(client, signal());
        if (cut.signal.aborted) countAnswer(tally, CUT_AT_STOP);
        else if (answer) countAnswer(tally, answer);
      } catch {
        countAnswer(tally, cut.signal.aborted ? CUT_AT_STOP : NO_ANSWER);
      }
    }
  };
  const loops = Promise.all(Array.from({ length: clients }, (_, i) => loop(i)));
  return {
    tally,
    signal,
    async stop() {
      stopping = true;
      const grace = setTimeout(() => cut.abort(), STOP_GRACE_MS);
      await loops;
      clearTimeout(grace);
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
