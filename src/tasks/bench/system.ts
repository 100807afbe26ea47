// The machine side of the bench: running tools, installing the missing ones from Debian's
// packages, free ports, what the machine is, and CPU time read from /proc.
import { freePort } from "../../net/free_port.ts";

export function log(line: string) {
  console.log(line);
}

/** Runs a command to completion; its output (stdout then stderr), or an error quoting both. */
export async function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`Command "${cmd} ${args.join(" ")}" failed:\n${text}`);
  return text;
}

export async function ensureTool(name: string, debianPackage: string) {
  try {
    await run("which", [name]);
  } catch {
    log(`installing ${debianPackage} from Debian's packages`);
    await run("apt-get", ["update", "-qq"]);
    await run("apt-get", ["install", "-y", "-qq", debianPackage], { DEBIAN_FRONTEND: "noninteractive" });
  }
}

export { freePort };

export async function describeMachine(): Promise<string> {
  const cpu = (await Deno.readTextFile("/proc/cpuinfo")).match(/model name\s*:\s*(.+)/)?.[1] ?? "unknown CPU";
  const memKb = Number((await Deno.readTextFile("/proc/meminfo")).match(/MemTotal:\s+(\d+)/)?.[1] ?? 0);
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  return `${navigator.hardwareConcurrency} cores, ${cpu}, ${Math.round(memKb / 1024 / 1024)} GiB; ` +
    `load average before the run ${load}`;
}

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime of the process itself, in ticks. */
  own: number;
  /** cutime + cstime: the children it has waited for, in ticks. */
  reaped: number;
}

function readStat(pid: number | string): ProcStat | undefined {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The command name may hold spaces; the fields after it are fixed.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return {
      pid: Number(pid),
      ppid: Number(fields[1]),
      own: Number(fields[11]) + Number(fields[12]),
      reaped: Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return undefined; // gone
  }
}

/** CPU seconds a process has used so far, all its threads. */
export function processCpuSeconds(pid: number): number {
  return (readStat(pid)?.own ?? 0) / TICKS_PER_SECOND;
}

/**
 * CPU seconds a Postgres cluster has used: the postmaster, its live children (backends, WAL
 * writer, checkpointer ...) and the children that exited, which the postmaster has reaped.
 */
export function clusterCpuSeconds(postmasterPid: number): number {
  const postmaster = readStat(postmasterPid);
  if (!postmaster) return 0;
  let ticks = postmaster.own + postmaster.reaped;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const stat = readStat(entry.name);
    if (stat?.ppid === postmasterPid) ticks += stat.own;
  }
  return ticks / TICKS_PER_SECOND;
}

/**
 * CPU seconds of the children this process has waited for: the load generators (wrk, pgbench),
 * which run one at a time and are reaped when their run ends.
 */
export function reapedChildrenCpuSeconds(): number {
  return (readStat("self")?.reaped ?? 0) / TICKS_PER_SECOND;
}

/**
 * The whole machine's CPU seconds so far (/proc/stat): `busy` is user, nice, system, irq and
 * softirq (the loopback network's work lands there too), `all` adds idle, iowait and steal.
 */
export function machineCpuSeconds(): { busy: number; all: number } {
  const fields = Deno.readTextFileSync("/proc/stat").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields;
  const busy = user + nice + system + irq + softirq;
  return { busy: busy / TICKS_PER_SECOND, all: (busy + idle + iowait + steal) / TICKS_PER_SECOND };
}

/** Peak resident memory (VmHWM) of a live process in MB; 0 once it is gone. */
export function peakRssMb(pid: number): number {
  try {
    const kb = Deno.readTextFileSync(`/proc/${pid}/status`).match(/VmHWM:\s+(\d+) kB/)?.[1];
    return Math.round(Number(kb ?? 0) / 1024);
  } catch {
    return 0;
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
