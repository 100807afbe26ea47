// The victim's KV workload: a fixed number of clients, each writing its own key and reading it
// back (billed POST and GET /kv) as fast as answers come, for a bounded time; runs in a worker
// so that the attackers' clients never delay its event loop.

export interface VictimKvParams {
  url: string;
  token: string;
  /** The victim's client address (X-Forwarded-For). */
  from: string;
  clients: number;
  seconds: number;
}

export interface VictimKvResult {
  /** Latency of each 2xx call, ms. */
  latenciesMs: number[];
  /** Calls answered otherwise or not answered. */
  errors: number;
  /** From the first call to the last answer. */
  seconds: number;
}

/** A value of 100 characters, as a small cached object would be. */
const VALUE = "v".repeat(100);
const CALL_TIMEOUT_MS = 30_000;

export async function victimKvLoad(params: VictimKvParams): Promise<VictimKvResult> {
  const latenciesMs: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + params.seconds * 1000;
  const headers = { "x-token": params.token, "x-forwarded-for": params.from };

  async function timed(method: string, path: string, body?: string) {
    const begun = performance.now();
    try {
      const res = await fetch(params.url + path, {
        method,
        headers,
        body,
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
      await res.arrayBuffer();
      if (res.ok) latenciesMs.push(performance.now() - begun);
      else errors++;
    } catch {
      errors++;
    }
  }

  async function client(index: number) {
    const path = `/kv/victim/k${index}`;
    while (performance.now() < deadline) {
      await timed("POST", path, VALUE);
      if (performance.now() >= deadline) break;
      await timed("GET", path);
    }
  }

  await Promise.all(Array.from({ length: params.clients }, (_, i) => client(i)));
  return { latenciesMs, errors, seconds: (performance.now() - started) / 1000 };
}
