// A fault of ours is never free to repeat: a wallet whose calls fault FAULTS_BEFORE_THROTTLE times
// within FAULT_WINDOW_MS is refused (429 with Retry-After) until the oldest of them leaves the
// window, so input that keeps reaching a fault costs its sender time and the service almost nothing.
// Per instance and bounded in memory: it slows a caller, it decides nothing that must hold across
// instances.

export const FAULTS_BEFORE_THROTTLE = 3;
export const FAULT_WINDOW_MS = 60_000;
/** Wallets remembered at most; past it the one that faulted longest ago is forgotten. */
const MAX_WALLETS = 10_000;

export class CallerThrottledError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super("Too Many Requests: recent calls of this wallet failed, retry later");
    this.name = "CallerThrottledError";
  }
}

export class FaultThrottle {
  /** Times of each wallet's latest faults, oldest first, at most FAULTS_BEFORE_THROTTLE. */
  readonly #faults = new Map<string, number[]>();

  constructor(readonly clock: () => number = () => performance.now()) {}

  record(walletId: string): void {
    const times = this.#faults.get(walletId) ?? [];
    this.#faults.delete(walletId);
    times.push(this.clock());
    if (times.length > FAULTS_BEFORE_THROTTLE) times.shift();
    this.#faults.set(walletId, times);
    if (this.#faults.size > MAX_WALLETS) this.#faults.delete(this.#faults.keys().next().value!);
  }

  /** Whole seconds until the wallet may call again; 0 when it may now. */
  waitSeconds(walletId: string): number {
    const times = this.#faults.get(walletId);
    if (!times || times.length < FAULTS_BEFORE_THROTTLE) return 0;
    const waitMs = times[0] + FAULT_WINDOW_MS - this.clock();
    if (waitMs > 0) return Math.ceil(waitMs / 1000);
    this.#faults.delete(walletId);
    return 0;
  }
}
