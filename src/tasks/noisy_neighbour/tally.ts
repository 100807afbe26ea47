// Counts an attacker's answers, pure: by status, and the 5xx it got without paying for them
// (no charge and no Retry-After), which issue 21 says a caller must never get.

export interface AnswerTally {
  requests: number;
  statuses: Record<string, number>;
  unbilled5xx: number;
  slowed5xx: number;
}

/**
 * One answer: an HTTP status (a number), or a label such as `smtp 554` or `network` (no answer),
 * which is counted but never judged as an HTTP 5xx; its charge and Retry-After.
 */
export interface Answer {
  status: number | string;
  /** X-Cost; null when absent. */
  cost: number | null;
  retryAfter: boolean;
}

export function newTally(): AnswerTally {
  return { requests: 0, statuses: {}, unbilled5xx: 0, slowed5xx: 0 };
}

export function countAnswer(tally: AnswerTally, answer: Answer): void {
  tally.requests++;
  const key = String(answer.status);
  tally.statuses[key] = (tally.statuses[key] ?? 0) + 1;
  if (typeof answer.status !== "number" || answer.status < 500) return;
  if (answer.retryAfter) tally.slowed5xx++;
  else if (!answer.cost) tally.unbilled5xx++;
}

/** Adds `more` into `into` (clients count apart, the attack reports one tally). */
export function mergeTally(into: AnswerTally, more: AnswerTally): AnswerTally {
  into.requests += more.requests;
  for (const [status, n] of Object.entries(more.statuses)) {
    into.statuses[status] = (into.statuses[status] ?? 0) + n;
  }
  into.unbilled5xx += more.unbilled5xx;
  into.slowed5xx += more.slowed5xx;
  return into;
}
