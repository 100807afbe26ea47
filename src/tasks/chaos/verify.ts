// Judges a load after the faults: every write that never got its 200 is sent again with its
// Idempotency-Key until it does (so each key is written, and charged, exactly once), every key is
// read back, and each wallet's spending is checked against what its calls may have cost.
import { type Answer, kvCall, type LoadOptions } from "./load.ts";

/** The phrase of a 503 whose call may have been applied (src/http/unavailable.ts). */
const OUTCOME_UNKNOWN = "outcome unknown";
const SETTLE_TIMEOUT_MS = 60_000;
const RETRY_PAUSE_MS = 200;

export interface Verdict {
  /** Writes answered 200 during the load. */
  acknowledged: number;
  /** Writes without a 200 during the load, sent again with their Idempotency-Key. */
  resent: number;
  /** Keys acknowledged (during the load or on their resend) that do not read back their value. */
  lost: string[];
  /** Answers that are neither 200 nor a 503 with Retry-After, nor no answer at all. */
  unexpected: Answer[];
  /** Wallets whose spending is outside what their calls may have cost. */
  wrongCharges: { client: number; spent: number; min: number; max: number }[];
}

/** The balance of a wallet, read through GET /token (which costs 1 credit). */
export async function balanceOf(baseUrl: string, token: string): Promise<number> {
  for (let attempt = 0;; attempt++) {
    const res = await fetch(`${baseUrl}/token`, { headers: { "x-token": token } });
    await res.body?.cancel();
    if (res.status === 200) return Number(res.headers.get("x-balance"));
    if (attempt > 50) throw new Error(`GET /token answered ${res.status}`);
    await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
  }
}

/**
 * Settles and checks a load. `baselines` are the balances read (through GET /token) before it
 * started, one per client; this reads them again at the end.
 */
export async function verifyLoad(
  options: Pick<LoadOptions, "baseUrl" | "tokens" | "callTimeoutMs">,
  answers: Answer[],
  baselines: number[],
): Promise<Verdict> {
  const verdict: Verdict = { acknowledged: 0, resent: 0, lost: [], unexpected: [], wrongCharges: [] };
  verdict.unexpected = answers.filter((a) =>
    a.status !== 200 && a.status !== 0 && !(a.status === 503 && a.retryAfter)
  );
  // Clients are settled side by side, each one's calls in order.
  await Promise.all(options.tokens.map(async (token, client) => {
    const mine = answers.filter((a) => a.client === client);
    const acked = new Set(mine.filter((a) => a.kind === "write" && a.status === 200).map((a) => a.key));
    const unsettled = new Set(mine.filter((a) => a.kind === "write" && !acked.has(a.key)).map((a) => a.key));
    verdict.acknowledged += acked.size;
    verdict.resent += unsettled.size;
    const written = new Set(acked);
    for (const key of unsettled) {
      const resent = await untilAnswered(options, { kind: "write", client, key, token });
      if (resent.status === 200) written.add(key);
      else verdict.unexpected.push(resent);
    }
    for (const key of written) {
      const read = await untilAnswered(options, { kind: "read", client, key, token });
      if (read.status !== 200 || read.phrase) verdict.lost.push(key);
    }
    // Each key written and read back once, the final GET /token, the load's reads answered 200 (or
    // 4xx), and maybe those whose outcome is unknown.
    const reads = mine.filter((a) => a.kind === "read");
    const certain = reads.filter((a) => a.status >= 200 && a.status < 500).length;
    const maybe = reads.filter((a) => a.status === 0 || (a.status >= 500 && !unchanged(a))).length;
    const min = written.size * 2 + certain + 1;
    const spent = baselines[client] - await balanceOf(options.baseUrl, token);
    if (spent < min || spent > min + maybe) {
      verdict.wrongCharges.push({ client, spent, min, max: min + maybe });
    }
  }));
  return verdict;
}

/** A 503 that says nothing was changed: the call was not charged. */
function unchanged(answer: Answer): boolean {
  return answer.status === 503 && !answer.phrase.includes(OUTCOME_UNKNOWN);
}

async function untilAnswered(
  options: Pick<LoadOptions, "baseUrl" | "callTimeoutMs">,
  call: Parameters<typeof kvCall>[1],
): Promise<Answer> {
  const deadline = performance.now() + SETTLE_TIMEOUT_MS;
  while (true) {
    const answer = await kvCall(options, call);
    if (answer.status !== 0 && answer.status !== 503) return answer;
    if (performance.now() > deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
  }
}
