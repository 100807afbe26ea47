// PgBouncer in front of a local PostgreSQL, for the tests, the bench and CI: the configuration is
// src/deploy/pgbouncer.ini with only the ports, the directories and the authentication (trust, as
// the local PostgreSQL has) changed. Run as a script it writes that configuration for .ci/run:
//   deno run --allow-all src/tasks/pgbouncer.ts <dir> <listen port> <PostgreSQL port>
import { freePort } from "../net/free_port.ts";

const TEMPLATE = new URL("../deploy/pgbouncer.ini", import.meta.url);
const START_TIMEOUT_MS = 10_000;

export interface PgBouncerPorts {
  /** Where PgBouncer listens. */
  listenPort: number;
  /** The PostgreSQL on 127.0.0.1 it lends connections of. */
  serverPort: number;
}

/** The deployment file's text with the keys of `section` set (replaced where present, else added). */
export function setIniValues(text: string, section: string, values: Record<string, string>): string {
  const lines = text.split("\n");
  const left = new Map(Object.entries(values));
  let current = "";
  const out: string[] = [];
  const flush = () => {
    if (current !== section) return;
    for (const [key, value] of left) out.push(`${key} = ${value}`);
    left.clear();
  };
  for (const line of lines) {
    const header = line.match(/^\s*\[([^\]]+)\]/);
    if (header) {
      flush();
      current = header[1];
    } else {
      const key = line.match(/^\s*([^;=\s][^=]*?)\s*=/)?.[1];
      if (current === section && key !== undefined && left.has(key)) {
        out.push(`${key} = ${left.get(key)}`);
        left.delete(key);
        continue;
      }
    }
    out.push(line);
  }
  flush();
  if (left.size) throw new Error(`Section "[${section}]" is missing from the PgBouncer configuration`);
  return out.join("\n");
}

/** The deployment configuration for a local run in `dir`: own ports, files and trust authentication. */
export async function localPgBouncerConfig(dir: string, ports: PgBouncerPorts): Promise<string> {
  const template = await Deno.readTextFile(TEMPLATE);
  const databases = setIniValues(template, "databases", {
    "*": `host=127.0.0.1 port=${ports.serverPort}`,
  });
  return setIniValues(databases, "pgbouncer", {
    listen_port: String(ports.listenPort),
    unix_socket_dir: "",
    logfile: `${dir}/pgbouncer.log`,
    pidfile: `${dir}/pgbouncer.pid`,
    auth_type: "trust",
    auth_file: `${dir}/userlist.txt`,
  });
}

/** Writes pgbouncer.ini and its user list into `dir`, readable by the user PgBouncer runs as. */
export async function writePgBouncerFiles(dir: string, ports: PgBouncerPorts): Promise<string> {
  const ini = `${dir}/pgbouncer.ini`;
  await Deno.writeTextFile(ini, await localPgBouncerConfig(dir, ports));
  // Trust still needs the role listed; PostgreSQL itself trusts local connections.
  await Deno.writeTextFile(`${dir}/userlist.txt`, '"postgres" ""\n');
  const owner = await runAsOwner();
  if (owner) {
    for (const path of [dir, ini, `${dir}/userlist.txt`]) await Deno.chown(path, owner.uid, owner.gid);
  }
  return ini;
}

/** PgBouncer refuses to run as root: then it switches to `postgres` (-u), which must own its files. */
async function runAsOwner(): Promise<{ uid: number; gid: number } | undefined> {
  if (Deno.uid() !== 0) return undefined;
  const out = await new Deno.Command("id", { args: ["postgres"], stdout: "piped", stderr: "null" }).output();
  const text = new TextDecoder().decode(out.stdout);
  const uid = text.match(/uid=(\d+)/)?.[1];
  const gid = text.match(/gid=(\d+)/)?.[1];
  if (!out.success || !uid || !gid) {
    throw new Error("PgBouncer cannot run as root and there is no postgres user");
  }
  return { uid: Number(uid), gid: Number(gid) };
}

export interface RunningPgBouncer {
  port: number;
  /** A connection string through PgBouncer for one of the server's databases. */
  url(database: string): string;
  stop(): Promise<void>;
}

/** Whether the pgbouncer binary is on the PATH. */
export async function hasPgBouncer(): Promise<boolean> {
  try {
    const out = await new Deno.Command("pgbouncer", { args: ["--version"], stdout: "null", stderr: "null" })
      .output();
    return out.success;
  } catch {
    return false;
  }
}

/** Starts PgBouncer in its own temporary directory, in front of PostgreSQL on `serverPort`. */
export async function startPgBouncer(options: { serverPort: number }): Promise<RunningPgBouncer> {
  const dir = await Deno.makeTempDir({ prefix: "pgbouncer-" });
  const port = freePort();
  const ini = await writePgBouncerFiles(dir, { listenPort: port, serverPort: options.serverPort });
  const asOwner = Deno.uid() === 0 ? ["-u", "postgres"] : [];
  const child = new Deno.Command("pgbouncer", { args: [...asOwner, ini], stdout: "piped", stderr: "piped" })
    .spawn();
  let output = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output = (output + decoder.decode(chunk)).slice(-20_000);
  };
  const pumping = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    await child.status;
    await pumping;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    await waitForPort(port, child.status);
  } catch (error) {
    await stop();
    throw new Error(`PgBouncer did not start: ${(error as Error).message}\n${output}`);
  }
  return { port, url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`, stop };
}

async function waitForPort(port: number, exited: Promise<Deno.CommandStatus>): Promise<void> {
  let gone = false;
  exited.then(() => gone = true);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline && !gone) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(gone ? "it exited" : `nothing listens on port ${port} after ${START_TIMEOUT_MS} ms`);
}

if (import.meta.main) {
  const [dir, listenPort, serverPort] = Deno.args;
  if (!dir || !Number(listenPort) || !Number(serverPort)) {
    console.error("Usage: pgbouncer.ts <dir> <listen port> <PostgreSQL port>");
    Deno.exit(2);
  }
  console.log(
    await writePgBouncerFiles(dir, { listenPort: Number(listenPort), serverPort: Number(serverPort) }),
  );
}
