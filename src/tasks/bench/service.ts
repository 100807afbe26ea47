// The service under load: started with the README's own command (the `serve` task of the checkout's
// deno.json, its permission flags included) in its default configuration (request log on, written
// to a file as `deno task serve > service.log` would, SMTP on, every worker running), optionally
// under the CPU profiler, and funded wallets created through its own API, as users would.
import { signStripePayload } from "../../payments/stripe_signature.ts";
import { BENCH_KEY_PATH, POST_VALUE_BYTES } from "./load.ts";
import { freePort, sleep } from "./system.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
/** The master key of the bench's databases (the baseline checkout ignores it). */
const BENCH_MASTER_KEY = "YmVuY2ggbWFzdGVyIGtleSwgb2YgdGhlIGJlbmNoIDE=";
export const PAYMENT_SECRET = "bench-payment-secret";
/** Requests in flight while funding wallets. */
const FUNDING_CONCURRENCY = 32;
const START_TIMEOUT_MS = 60_000;

export interface RunningService {
  url: string;
  pid: number;
  /** Where its stdout (the request log and the "ledger" lines) goes; removed when it stops. */
  logFile: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  cpuProfileDir?: string;
  /** Another checkout (the baseline commit): its own deno.json's command, src/ and dependencies. */
  root?: string;
  /**
   * Funding creates many wallets from this one machine: only then does each request name its own
   * client address (TRUST_PROXY), past the per-network token limit. Measured services run without it.
   */
  funding?: boolean;
}

/** The `serve` task of a checkout's deno.json, as arguments for this Deno, with the profiler's flags. */
export async function serveCommand(root: string, profile: string[] = []): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(`${root}/deno.json`)) as { tasks?: { serve?: string } };
  const serve = config.tasks?.serve;
  const words = serve?.trim().split(/\s+/) ?? [];
  if (words[0] !== "deno" || words[1] !== "run") {
    throw new Error(`Invalid serve task "${serve}" in ${root}/deno.json: must start with "deno run"`);
  }
  return ["run", ...profile, ...words.slice(2)];
}

export async function startService(
  env: Record<string, string>,
  options: StartOptions = {},
): Promise<RunningService> {
  const port = freePort();
  const root = options.root ?? ROOT;
  const profile = options.cpuProfileDir ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfileDir}`] : [];
  const args = await serveCommand(root, profile);
  const logFile = await Deno.makeTempFile({ prefix: "bench-service-", suffix: ".log" });
  // `exec` keeps the pid the service's own, so its CPU time is read from it; stdout goes to the file.
  const child = new Deno.Command("sh", {
    args: ["-c", 'exec "$@" > "$BENCH_SERVICE_LOG"', "sh", Deno.execPath(), ...args],
    cwd: root,
    env: {
      BENCH_SERVICE_LOG: logFile,
      PORT: String(port),
      HOSTNAME: "127.0.0.1",
      SMTP_PORT: String(freePort()),
      PAYMENT_WEBHOOK_SECRET: PAYMENT_SECRET,
      MASTER_KEY: BENCH_MASTER_KEY,
      ...(options.funding ? { TRUST_PROXY: "1" } : {}),
      ...env,
    },
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (true) {
    try {
      const res = await fetch(`${url}/healthz`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch { /* starting */ }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`The service did not answer /healthz within ${START_TIMEOUT_MS} ms`);
    }
    await sleep(100);
  }
  return {
    url,
    pid: child.pid,
    logFile,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await Deno.remove(logFile).catch(() => {});
    },
  };
}

/** The answer's text, or an error naming the request and the status when it is not a 2xx. */
export async function expectOk(res: Response, what: string): Promise<string> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what} answered ${res.status}: ${text}`);
  return text;
}

/**
 * A new token with 1,000,000 credits bought through the payment webhook (the service must run with
 * PAYMENT_WEBHOOK_SECRET = PAYMENT_SECRET); `address` names the client when the service trusts a proxy.
 */
export async function fundedToken(url: string, address?: string): Promise<string> {
  const token = await expectOk(
    await fetch(`${url}/token`, {
      method: "POST",
      body: new URLSearchParams({ token: "new" }),
      headers: address ? { "x-forwarded-for": address } : {},
    }),
    "POST /token",
  );
  const body = JSON.stringify({
    id: `evt_bench_${crypto.randomUUID()}`,
    type: "checkout.session.completed",
    data: { object: { client_reference_id: token, payment_status: "paid", metadata: { tier: "1" } } },
  });
  await expectOk(
    await fetch(`${url}/payments/webhook`, {
      method: "POST",
      body,
      headers: {
        "content-type": "application/json",
        "stripe-signature": await signStripePayload(body, PAYMENT_SECRET, new Date()),
      },
    }),
    "POST /payments/webhook",
  );
  return token;
}

/** One wallet: a funded token from its own client address, and the key the GETs read. */
async function fundOne(url: string, index: number): Promise<string> {
  const token = await fundedToken(url, `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`);
  await expectOk(
    await fetch(`${url}${BENCH_KEY_PATH}`, {
      method: "POST",
      headers: { "x-token": token },
      body: "v".repeat(POST_VALUE_BYTES),
    }),
    `POST ${BENCH_KEY_PATH}`,
  );
  return token;
}

/** `count` funded wallets, their tokens in creation order. */
export async function fundWallets(url: string, count: number): Promise<string[]> {
  const tokens: string[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      tokens[index] = await fundOne(url, index + 1);
    }
  };
  await Promise.all(Array.from({ length: Math.min(FUNDING_CONCURRENCY, count) }, worker));
  return tokens;
}
