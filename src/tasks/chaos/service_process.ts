// The service as `deno task chaos` runs it: a child process it can start, SIGKILL and start again,
// and that it watches for exits it did not cause.

export interface ServiceProcess {
  url: string;
  /** Starts the service and waits until /healthz answers. */
  start(): Promise<void>;
  /** kill -9: no chance to clean up. */
  kill(): Promise<void>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** The process id while it runs. */
  pid(): number | undefined;
  /** Exits the chaos task did not cause (a crash). */
  readonly crashes: number;
  /** The last lines of its output, for a report. */
  output(): string;
}

const ROOT = new URL("../../../", import.meta.url).pathname;
const START_TIMEOUT_MS = 60_000;
const OUTPUT_KEPT = 100_000;

/**
 * `args`: the `deno` arguments that run it (default `run --allow-all src/main.ts`), e.g. those of a
 * deployment file's command line.
 */
export function serviceProcess(
  port: number,
  env: Record<string, string>,
  args = ["run", "--allow-all", "src/main.ts"],
): ServiceProcess {
  let child: Deno.ChildProcess | undefined;
  let crashes = 0;
  let output = "";
  const url = `http://127.0.0.1:${port}`;

  async function pump(stream: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    for await (const chunk of stream) output = (output + decoder.decode(chunk)).slice(-OUTPUT_KEPT);
  }

  async function halt(signal: Deno.Signal) {
    const current = child;
    child = undefined;
    if (!current) return;
    try {
      current.kill(signal);
    } catch { /* already gone */ }
    await current.status;
  }

  return {
    url,
    get crashes() {
      return crashes;
    },
    output: () => output,
    pid: () => child?.pid,
    async start() {
      const spawned = new Deno.Command(Deno.execPath(), {
        args,
        cwd: ROOT,
        env: { ...env, PORT: String(port), HOSTNAME: "127.0.0.1" },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      child = spawned;
      pump(spawned.stdout);
      pump(spawned.stderr);
      spawned.status.then((status) => {
        // Still the current child: nobody asked it to go.
        if (child === spawned) {
          crashes++;
          child = undefined;
          output += `\n[chaos] the service exited by itself (code ${status.code}, signal ${status.signal})\n`;
        }
      });
      const deadline = performance.now() + START_TIMEOUT_MS;
      while (performance.now() < deadline) {
        if (child !== spawned) throw new Error(`The service exited during start-up:\n${output.slice(-4000)}`);
        try {
          const res = await fetch(`${url}/healthz`);
          await res.body?.cancel();
          if (res.ok) return;
        } catch { /* not listening yet */ }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`The service did not start within ${START_TIMEOUT_MS / 1000} s`);
    },
    kill: () => halt("SIGKILL"),
    stop: () => halt("SIGTERM"),
  };
}
