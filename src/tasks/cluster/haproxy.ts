// HAProxy for `deno task cluster`: Debian's haproxy (installed when missing), run in the foreground
// on src/deploy/haproxy.cfg with this run's ports, and its runtime API (the stats socket) to read
// each instance's state and counters and to take instances out and back.
import { ensureTool, run } from "../bench/system.ts";
import { BACKEND, HAPROXY_FILE, haproxyConfig } from "./deploy_files.ts";

export interface ServerStat {
  name: string;
  /** UP, DOWN, MAINT, "UP 1/2" (going down), "DOWN 1/2" (coming up) ... */
  status: string;
  /** Requests answered with a 2xx, 4xx and 5xx status, and in all. */
  responses2xx: number;
  responses4xx: number;
  responses5xx: number;
  requests: number;
}

export interface Haproxy {
  url: string;
  pid: number;
  stats(): Promise<ServerStat[]>;
  /** `ready` or `maint` (taken out by the operator) for server app<n>. */
  setState(server: string, state: "ready" | "maint"): Promise<void>;
  /** Resolves once every named server's status satisfies `ok`; throws past the timeout. */
  waitFor(servers: string[], ok: (status: string) => boolean, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Installs Debian's haproxy when it is missing, as .ci/run and the deploy test do too. */
export async function ensureHaproxy(): Promise<string> {
  await ensureTool("haproxy", "haproxy");
  return (await run("haproxy", ["-v"])).split("\n")[0];
}

/** Writes the configuration for these ports, checks it with `haproxy -c` and starts HAProxy. */
export async function startHaproxy(port: number, servers: number[], dir: string): Promise<Haproxy> {
  const socket = `${dir}/admin.sock`;
  const file = `${dir}/haproxy.cfg`;
  await Deno.writeTextFile(
    file,
    haproxyConfig(await Deno.readTextFile(HAPROXY_FILE), { port, servers, socket }),
  );
  await run("haproxy", ["-c", "-q", "-f", file]);
  const child = new Deno.Command("haproxy", { args: ["-db", "-f", file], stdout: "null", stderr: "piped" })
    .spawn();
  let errors = "";
  (async () => {
    for await (const chunk of child.stderr) {
      errors = (errors + new TextDecoder().decode(chunk)).slice(-10_000);
    }
  })();
  const command = (line: string) => runtimeCommand(socket, line);
  const haproxy: Haproxy = {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stats: async () => parseStats(await command("show stat")),
    async setState(server, state) {
      const answer = await command(`set server ${BACKEND}/${server} state ${state}`);
      if (answer.trim()) throw new Error(`HAProxy refused "set server ${server} state ${state}": ${answer}`);
    },
    async waitFor(names, ok, timeoutMs = 30_000) {
      const deadline = performance.now() + timeoutMs;
      while (true) {
        const stats = await haproxy.stats().catch(() => []);
        const states = names.map((name) => stats.find((s) => s.name === name)?.status ?? "absent");
        if (states.every(ok)) return;
        if (performance.now() > deadline) {
          throw new Error(`HAProxy servers ${names.join(", ")} are ${states.join(", ")}\n${errors}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
    },
  };
  return haproxy;
}

async function runtimeCommand(socket: string, line: string): Promise<string> {
  const connection = await Deno.connect({ transport: "unix", path: socket });
  try {
    await connection.write(new TextEncoder().encode(`${line}\n`));
    let answer = "";
    const buffer = new Uint8Array(65536);
    while (true) {
      const n = await connection.read(buffer);
      if (n === null) return answer;
      answer += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } finally {
    connection.close();
  }
}

/** The backend's server lines of `show stat` (CSV with a `# pxname,svname,...` header). */
function parseStats(csv: string): ServerStat[] {
  const [header, ...rows] = csv.trim().split("\n");
  const columns = header.replace(/^# /, "").split(",");
  const at = (row: string[], name: string) => row[columns.indexOf(name)];
  return rows.map((line) => line.split(","))
    .filter((row) => at(row, "pxname") === BACKEND && !["BACKEND", "FRONTEND"].includes(at(row, "svname")))
    .map((row) => ({
      name: at(row, "svname"),
      status: at(row, "status"),
      responses2xx: Number(at(row, "hrsp_2xx")),
      responses4xx: Number(at(row, "hrsp_4xx")),
      responses5xx: Number(at(row, "hrsp_5xx")),
      requests: ["1xx", "2xx", "3xx", "4xx", "5xx", "other"]
        .reduce((sum, kind) => sum + Number(at(row, `hrsp_${kind}`) || 0), 0),
    }));
}
