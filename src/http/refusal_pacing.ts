// Refusals are answered slowly to a client that keeps earning them. A client's refusals (bad input,
// 401, 402, 403, 422, 429 ...) cost it nothing or little, and a client that loops on them would
// take the event loop from every other tenant; past a burst, each further refusal is held before it
// is sent, so a client looping on N connections gets at most N answers a second until it pauses. The client is its
// wallet once authenticated, else its network. Per instance and bounded in memory: it paces, it
// decides nothing that must hold across instances. 404, 409 and 412 are ordinary outcomes of
// ordinary calls and never count.
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import { clientNetworkOf } from "./middleware.ts";

/** Refusals a client may get at once and every 10 s on average before they are held. */
export const REFUSALS_PER_10_S = 100;
/** How long a refusal past the budget is held before it is sent. */
export const REFUSAL_HOLD_MS = 1000;
const CLIENTS_KEPT = 10_000;

/** The statuses that count: refusals a client brought on itself, again and again. */
const PACED_STATUSES = new Set([400, 401, 402, 403, 405, 415, 422, 429]);

/**
 * Each client's refusals as one number, the time its budget is whole again (GCRA). Every refusal
 * counts, held or not, so a client that keeps looping stays held until it pauses; the debt is
 * capped at one window past the burst. Bounded: the least recently refused client is forgotten.
 */
export class RefusalBudget {
  readonly #due = new Map<string, number>();
  readonly #intervalMs: number;

  constructor(readonly perWindow: number, readonly windowMs: number, readonly maxClients = CLIENTS_KEPT) {
    this.#intervalMs = windowMs / perWindow;
  }

  /** Counts a refusal of `client`; true when it is past the burst and is to be held. */
  refused(client: string, now = performance.now()): boolean {
    const due = Math.min(
      Math.max(this.#due.get(client) ?? now, now) + this.#intervalMs,
      now + 2 * this.windowMs,
    );
    this.#due.delete(client);
    this.#due.set(client, due);
    if (this.#due.size > this.maxClients) this.#due.delete(this.#due.keys().next().value!);
    return due - now > this.windowMs;
  }
}

/** The pacing of one service's refusals: undefined for an answer not held, else the hold to await. */
export function refusalPacer(
  options: { perWindow?: number; holdMs?: number } = {},
): (c: Context<AppEnv>) => Promise<void> | undefined {
  const budget = new RefusalBudget(options.perWindow ?? REFUSALS_PER_10_S, 10_000);
  const holdMs = options.holdMs ?? REFUSAL_HOLD_MS;
  return (c) => {
    if (!PACED_STATUSES.has(c.res.status)) return undefined;
    const client = c.get("walletId") ?? `net ${clientNetworkOf(c)}`;
    if (!budget.refused(client)) return undefined;
    return new Promise((resolve) => setTimeout(resolve, holdMs));
  };
}
