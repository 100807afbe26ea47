// A bounded client load for fault tests and `deno task chaos`: each client owns one wallet, writes
// distinct KV keys (each with its own Idempotency-Key, so a retry is safe) and reads each written
// key back. Every answer is recorded with its time, so a run can be judged afterwards.

export type CallKind = "write" | "read";

export interface Answer {
  kind: CallKind;
  client: number;
  key: string;
  /** HTTP status; 0 when no answer came (connection refused or reset, or past the client's timeout). */
  status: number;
  /** The error phrase of a non-200 answer, or why none came. */
  phrase: string;
  retryAfter: boolean;
  /** performance.now() when the call was sent, and how long its answer took. */
  at: number;
  ms: number;
}

export interface LoadOptions {
  /** The service, e.g. http://127.0.0.1:8787. */
  baseUrl: string;
  /** One token per client. */
  tokens: string[];
  /** A call with no answer by then counts as none (status 0). */
  callTimeoutMs: number;
  /** Pause after a call that got no 200, so a refused service is not spun on. */
  pauseAfterFailureMs?: number;
}

export interface RunningLoad {
  answers: Answer[];
  /** Stops sending and waits for the calls in flight. */
  stop(): Promise<Answer[]>;
}

export const KV_BUCKET = "load";
/** The value stored under a key: tells a lost write from a wrong one. */
export const valueOf = (key: string) => `value of ${key}`;

export function startLoad(options: LoadOptions): RunningLoad {
  const answers: Answer[] = [];
  let running = true;
  const pause = options.pauseAfterFailureMs ?? 100;
  const clients = options.tokens.map(async (token, client) => {
    for (let n = 0; running; n++) {
      const key = `c${client}-${n}-${crypto.randomUUID().slice(0, 8)}`;
      const write = await kvCall(options, { kind: "write", client, key, token });
      answers.push(write);
      if (write.status !== 200) {
        await new Promise((resolve) => setTimeout(resolve, pause));
        continue;
      }
      const read = await kvCall(options, { kind: "read", client, key, token });
      answers.push(read);
      if (read.status !== 200) await new Promise((resolve) => setTimeout(resolve, pause));
    }
  });
  return {
    answers,
    async stop() {
      running = false;
      await Promise.all(clients);
      return answers;
    },
  };
}

/** One KV call as the load makes it: a write (POST with Idempotency-Key = key) or a read. */
export async function kvCall(
  options: Pick<LoadOptions, "baseUrl" | "callTimeoutMs">,
  call: { kind: CallKind; client: number; key: string; token: string },
): Promise<Answer> {
  const at = performance.now();
  const headers: Record<string, string> = { "x-token": call.token };
  if (call.kind === "write") headers["idempotency-key"] = call.key;
  try {
    const res = await fetch(`${options.baseUrl}/kv/${KV_BUCKET}/${call.key}`, {
      method: call.kind === "write" ? "POST" : "GET",
      headers,
      body: call.kind === "write" ? valueOf(call.key) : undefined,
      signal: AbortSignal.timeout(options.callTimeoutMs),
    });
    const text = await res.text();
    const wrongValue = call.kind === "read" && res.status === 200 && text !== valueOf(call.key);
    return {
      kind: call.kind,
      client: call.client,
      key: call.key,
      status: res.status,
      phrase: wrongValue ? `Wrong value "${text.slice(0, 60)}"` : res.status === 200 ? "" : text,
      retryAfter: res.headers.has("retry-after"),
      at,
      ms: performance.now() - at,
    };
  } catch (error) {
    const phrase = error instanceof DOMException && error.name === "TimeoutError"
      ? `No answer within ${options.callTimeoutMs} ms`
      : `No answer: ${error instanceof Error ? error.message : error}`;
    const { kind, client, key } = call;
    return { kind, client, key, status: 0, phrase, retryAfter: false, at, ms: performance.now() - at };
  }
}
