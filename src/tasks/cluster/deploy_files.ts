// The deployment files of src/deploy/ read as the cluster task runs them: the service's command
// line from the systemd unit, its environment from the environment file, and the HAProxy
// configuration with this run's ports filled in. Each rewrite must find what it replaces, so the
// task and the files cannot drift apart unnoticed.

export const DEPLOY_DIR = new URL("../../deploy/", import.meta.url).pathname;
export const UNIT_FILE = `${DEPLOY_DIR}credit-api@.service`;
export const ENV_FILE = `${DEPLOY_DIR}credit-api.env`;
export const HAPROXY_FILE = `${DEPLOY_DIR}haproxy.cfg`;
export const BACKEND = "instances";

/** The `key=value` lines of a systemd unit's section, in order (a key may repeat). */
export function unitEntries(text: string, section: string): [string, string][] {
  const entries: [string, string][] = [];
  let current = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const header = line.match(/^\[(.+)\]$/);
    if (header) current = header[1];
    else if (current === section) {
      const at = line.indexOf("=");
      if (at > 0) entries.push([line.slice(0, at).trim(), line.slice(at + 1).trim()]);
    }
  }
  return entries;
}

/** The unit's ExecStart: the deno binary it names and the arguments after it. */
export async function serviceCommand(): Promise<{ binary: string; args: string[] }> {
  const entries = unitEntries(await Deno.readTextFile(UNIT_FILE), "Service");
  const exec = entries.filter(([key]) => key === "ExecStart");
  if (exec.length !== 1) throw new Error(`${UNIT_FILE}: expected one ExecStart, found ${exec.length}`);
  const [binary, ...args] = exec[0][1].split(/\s+/);
  if (!binary.endsWith("/deno") || args[0] !== "run" || args.at(-1) !== "src/main.ts") {
    throw new Error(`${UNIT_FILE}: ExecStart "${exec[0][1]}" is not "<path>/deno run ... src/main.ts"`);
  }
  return { binary, args };
}

/** An environment file's variables (`NAME=value` lines; `#` starts a comment line). */
export function parseEnvironmentFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [n, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const match = line.match(/^([A-Z_][A-Z0-9_]*)=(.*)$/);
    if (!match) throw new Error(`Invalid line ${n + 1} of the environment file: "${line}"`);
    env[match[1]] = match[2];
  }
  return env;
}

export async function instanceEnvironment(): Promise<Record<string, string>> {
  return parseEnvironmentFile(await Deno.readTextFile(ENV_FILE));
}

export interface HaproxyPorts {
  /** Where HAProxy listens for HTTP. */
  port: number;
  /** The instances' HTTP ports, in order: servers app1, app2 ... */
  servers: number[];
  /** Path of the runtime API's socket. */
  socket: string;
}

function replaceOnce(text: string, pattern: RegExp, by: string, what: string): string {
  const found = text.match(new RegExp(pattern.source, "gm"))?.length ?? 0;
  if (found !== 1) throw new Error(`${HAPROXY_FILE}: expected one ${what}, found ${found}`);
  return text.replace(new RegExp(pattern.source, "m"), by);
}

/** The deployment's haproxy.cfg with this run's listening port, instances and socket. */
export function haproxyConfig(text: string, ports: HaproxyPorts): string {
  let config = replaceOnce(text, /^(\s*)bind :\d+$/, `$1bind 127.0.0.1:${ports.port}`, "bind line");
  config = replaceOnce(config, /^(\s*)stats socket \S+/, `$1stats socket ${ports.socket}`, "stats socket");
  const server = /^[ \t]*server app\d+ 127\.0\.0\.1:\d+[ \t]*\n/gm;
  const found = [...config.matchAll(server)];
  if (found.length === 0) throw new Error(`${HAPROXY_FILE}: no "server appN 127.0.0.1:port" lines`);
  const indent = found[0][0].match(/^[ \t]*/)![0];
  const lines = ports.servers.map((port, i) => `${indent}server app${i + 1} 127.0.0.1:${port}\n`).join("");
  // The first server line becomes this run's servers, the others go.
  let n = 0;
  return config.replace(server, () => n++ === 0 ? lines : "");
}
