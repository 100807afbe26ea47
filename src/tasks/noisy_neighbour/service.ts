// The service as the README's command runs it: `deno run` with the flags of deno.json's `serve`
// task, default configuration, and only the variables the measurement needs (listed with why),
// nothing inherited from the caller's environment that could change its configuration.
import { generateMasterKeyText } from "../../secrets/master_key.ts";
import { freePort } from "../bench/system.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const START_TIMEOUT_MS = 60_000;
/** Output kept for a failure report; the request log is read and dropped as it comes. */
const OUTPUT_KEPT_BYTES = 64 * 1024;

/** A variable the task sets, and why the measurement needs it. */
export interface SetVariable {
  name: string;
  value: string;
  why: string;
}

export interface NoisyService {
  url: string;
  smtpPort: number;
  pid: number;
  /** What differs from the default configuration. */
  variables: SetVariable[];
  /** The command line, as run. */
  command: string;
  /** Exited without being asked to. */
  exited(): boolean;
  /** The last output (stdout and stderr), for a failure report. */
  output(): string;
  stop(): Promise<void>;
}

/** The `deno` arguments of deno.json's serve task (`deno run --allow-... src/main.ts`). */
export async function serveTaskArgs(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
    tasks?: Record<string, string>;
  };
  const serve = config.tasks?.serve;
  if (!serve) throw new Error(`deno.json has no "serve" task`);
  const words = serve.trim().split(/\s+/);
  if (words[0] !== "deno") throw new Error(`The serve task does not start with deno: "${serve}"`);
  return words.slice(1);
}

/** What the service may inherit: where things are (PATH, HOME, caches), none of its configuration. */
function inheritedEnvironment(): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(Deno.env.toObject())) {
    if (
      ["PATH", "HOME", "TMPDIR", "LANG", "USER"].includes(name) || name.startsWith("DENO_") ||
      /^npm_config_/i.test(name) || /^(https?|no|all)_proxy$/i.test(name)
    ) {
      kept[name] = value;
    }
  }
  return kept;
}

/** Keeps the last bytes of a stream without decoding them as they come. */
function tail(stream: ReadableStream<Uint8Array>, into: Uint8Array[]) {
  (async () => {
    let kept = 0;
    for await (const chunk of stream) {
      into.push(chunk);
      kept += chunk.byteLength;
      while (kept - into[0].byteLength > OUTPUT_KEPT_BYTES) kept -= into.shift()!.byteLength;
    }
  })().catch(() => {});
}

const NOISY_MASTER_KEY = generateMasterKeyText();

export async function startNoisyService(
  options: { databaseUrl: string; paymentSecret: string },
): Promise<NoisyService> {
  const port = freePort();
  const smtpPort = freePort();
  const variables: SetVariable[] = [
    { name: "DATABASE_URL", value: options.databaseUrl, why: "the task's own PostgreSQL 15 cluster" },
    { name: "PORT", value: String(port), why: "a spare port" },
    { name: "SMTP_PORT", value: String(smtpPort), why: "a spare port" },
    {
      name: "HOSTNAME",
      value: "127.0.0.1",
      why: "all traffic stays on the loopback; nothing listens outside",
    },
    {
      name: "UNSAFE_ALLOW_PRIVATE_WEBHOOKS",
      value: "1",
      why: "deliveries go to the task's local receivers (http://127.0.0.1)",
    },
    {
      name: "MASTER_KEY",
      value: NOISY_MASTER_KEY,
      why: "the service refuses Postgres without a master key for the wallets' data keys",
    },
    {
      name: "TRUST_PROXY",
      value: "1",
      why: "each wallet is made from its own client address (X-Forwarded-For), as the bench's funding does",
    },
    {
      name: "PAYMENT_WEBHOOK_SECRET",
      value: options.paymentSecret,
      why: "wallets are funded through a signed payment, as the bench does",
    },
  ];
  const args = await serveTaskArgs();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    clearEnv: true,
    env: { ...inheritedEnvironment(), ...Object.fromEntries(variables.map((v) => [v.name, v.value])) },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const chunks: Uint8Array[] = [];
  tail(child.stdout, chunks);
  tail(child.stderr, chunks);
  let exited = false;
  let stopping = false;
  child.status.then(() => {
    exited = true;
  });
  const url = `http://127.0.0.1:${port}`;
  const service: NoisyService = {
    url,
    smtpPort,
    pid: child.pid,
    variables,
    command: `deno ${args.join(" ")}`,
    exited: () => exited && !stopping,
    output: () => new TextDecoder().decode(concat(chunks)),
    async stop() {
      if (exited) return;
      stopping = true;
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      const killed = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* gone */ }
      }, 15_000);
      await child.status;
      clearTimeout(killed);
    },
  };
  const deadline = performance.now() + START_TIMEOUT_MS;
  while (true) {
    if (exited) throw new Error(`The service exited during start-up:\n${service.output().slice(-4000)}`);
    try {
      const res = await fetch(`${url}/healthz`);
      await res.body?.cancel();
      if (res.ok) return service;
    } catch { /* not listening yet */ }
    if (performance.now() > deadline) {
      await service.stop();
      throw new Error(`The service did not answer /healthz within ${START_TIMEOUT_MS / 1000} s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
