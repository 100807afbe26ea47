// The memory of the embedded default (issue 22): `deno task serve` as a user runs it, without
// DATABASE_URL, on a new data directory; the service process's resident memory (VmRSS, the deno
// process the task runner starts, not the runner) once it answers, and after 1,000 billed calls.
import { expectOk, fundedToken, PAYMENT_SECRET } from "./service.ts";
import { freePort, sleep } from "./system.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
/** Issue 22's target: resident memory after start and 1,000 billed calls. */
export const EMBEDDED_RSS_TARGET_MB = 300;
const START_TIMEOUT_MS = 120_000;

export interface EmbeddedMemory {
  calls: number;
  /** VmRSS once /healthz answers, in MB. */
  startRssMb: number;
  /** VmRSS after the calls, in MB. */
  callsRssMb: number;
  /** VmHWM after the calls: the highest it has been, start-up included. */
  peakRssMb: number;
  targetMb: number;
}

function status(pid: number): string {
  return Deno.readTextFileSync(`/proc/${pid}/status`);
}

function kbField(text: string, field: "VmRSS" | "VmHWM"): number {
  const kb = text.match(new RegExp(`${field}:\\s+(\\d+) kB`))?.[1];
  if (!kb) throw new Error(`No ${field} in /proc status`);
  return Math.round(Number(kb) / 1024);
}

/** The process under `pid` (the task runner) whose command line runs src/main.ts. */
function serviceProcess(runnerPid: number): number | undefined {
  const children = new Map<number, number[]>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(parent, [...children.get(parent) ?? [], Number(entry.name)]);
    } catch { /* gone meanwhile */ }
  }
  const queue = [...children.get(runnerPid) ?? []];
  while (queue.length) {
    const pid = queue.shift()!;
    try {
      if (Deno.readTextFileSync(`/proc/${pid}/cmdline`).includes("src/main.ts")) return pid;
    } catch { /* gone meanwhile */ }
    queue.push(...children.get(pid) ?? []);
  }
  return undefined;
}

/** Where things are (PATH, HOME, Deno's caches) and nothing of the service's configuration. */
function userEnvironment(): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(Deno.env.toObject())) {
    if (["PATH", "HOME", "TMPDIR", "LANG", "USER"].includes(name) || name.startsWith("DENO_")) {
      kept[name] = value;
    }
  }
  return kept;
}

/** Half writes (POST /kv), half reads (GET /kv) of 50 keys, one after the other, each billed 1. */
async function billedCalls(url: string, token: string, calls: number) {
  for (let i = 0; i < calls; i++) {
    const path = `${url}/kv/bench/k${(i >> 1) % 50}`;
    const res = i % 2 === 0
      ? await fetch(path, { method: "POST", headers: { "x-token": token }, body: `value ${i}` })
      : await fetch(path, { headers: { "x-token": token } });
    await expectOk(res, `call ${i + 1}`);
  }
}

export async function measureEmbeddedMemory(options: { calls?: number } = {}): Promise<EmbeddedMemory> {
  const calls = options.calls ?? 1000;
  const dataDir = await Deno.makeTempDir({ prefix: "credit-api-embedded-" });
  const port = freePort();
  const runner = new Deno.Command(Deno.execPath(), {
    args: ["task", "serve"],
    cwd: ROOT,
    clearEnv: true,
    env: {
      ...userEnvironment(),
      PORT: String(port),
      HOSTNAME: "127.0.0.1",
      SMTP_PORT: String(freePort()),
      DATA_DIR: dataDir,
      PAYMENT_WEBHOOK_SECRET: PAYMENT_SECRET,
    },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let errors = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of runner.stderr) errors = (errors + decoder.decode(chunk)).slice(-20_000);
  })();
  let service: number | undefined;
  try {
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (true) {
      try {
        const res = await fetch(`${url}/healthz`);
        await res.body?.cancel();
        if (res.ok) break;
      } catch { /* starting */ }
      if (Date.now() > deadline) {
        throw new Error(`The service did not answer /healthz within ${START_TIMEOUT_MS} ms:\n${errors}`);
      }
      await sleep(100);
    }
    service = serviceProcess(runner.pid);
    if (!service) throw new Error(`No src/main.ts process under the task runner ${runner.pid}`);
    const startRssMb = kbField(status(service), "VmRSS");
    await billedCalls(url, await fundedToken(url), calls);
    const after = status(service);
    return {
      calls,
      startRssMb,
      callsRssMb: kbField(after, "VmRSS"),
      peakRssMb: kbField(after, "VmHWM"),
      targetMb: EMBEDDED_RSS_TARGET_MB,
    };
  } finally {
    // The runner does not pass signals on: the service is stopped itself, then the runner ends.
    try {
      Deno.kill(service ?? runner.pid, "SIGTERM");
    } catch { /* already gone */ }
    await runner.status;
    await reading;
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

export function embeddedLines(memory: EmbeddedMemory): string[] {
  const verdict = memory.callsRssMb <= memory.targetMb ? "PASS" : "FAIL";
  return [
    `embedded (deno task serve, no DATABASE_URL, new DATA_DIR): RSS ${memory.startRssMb} MB after start, ` +
    `${memory.callsRssMb} MB after ${memory.calls.toLocaleString("en-US")} billed calls ` +
    `(peak ${memory.peakRssMb} MB); target at most ${memory.targetMb} MB: ${verdict}`,
  ];
}
