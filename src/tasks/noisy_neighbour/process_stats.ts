// The service's memory and the CPU each side used over a phase: the peak resident set (VmHWM,
// reset at the phase's start through clear_refs, and VmRSS sampled as a check), CPU seconds of the
// service, the Postgres cluster, this task, and every other process of the machine (work that is
// not the task's makes a window's figures less comparable).
import { clusterCpuSeconds, machineCpuSeconds, processCpuSeconds } from "../bench/system.ts";

const SAMPLE_EVERY_MS = 200;

function statusKb(pid: number, field: "VmHWM" | "VmRSS"): number {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/status`);
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

export interface PhaseMeter {
  /** The peak RSS in MB since the meter started, and the CPU seconds each side used. */
  stop(): {
    peakRssMb: number;
    cpuSeconds: { service: number; postgres: number; task: number; others: number };
  };
}

/**
 * Starts measuring a phase. Writing 5 to clear_refs resets the kernel's peak (VmHWM) to the
 * current RSS, so the peak is the phase's own; sampling VmRSS covers a kernel without it.
 */
export function startPhaseMeter(servicePid: number, postmasterPid: number): PhaseMeter {
  try {
    Deno.writeTextFileSync(`/proc/${servicePid}/clear_refs`, "5");
  } catch { /* an older kernel: the samples still count */ }
  let sampledKb = statusKb(servicePid, "VmRSS");
  const sampler = setInterval(() => {
    sampledKb = Math.max(sampledKb, statusKb(servicePid, "VmRSS"));
  }, SAMPLE_EVERY_MS);
  const cpu = () => ({
    service: processCpuSeconds(servicePid),
    postgres: clusterCpuSeconds(postmasterPid),
    task: processCpuSeconds(Deno.pid),
    machine: machineCpuSeconds().busy,
  });
  const before = cpu();
  return {
    stop() {
      clearInterval(sampler);
      const after = cpu();
      const peakKb = Math.max(sampledKb, statusKb(servicePid, "VmRSS"), statusKb(servicePid, "VmHWM"));
      const used = (side: keyof typeof before) => after[side] - before[side];
      const tenths = (seconds: number) => Math.round(seconds * 10) / 10;
      const ours = used("service") + used("postgres") + used("task");
      return {
        peakRssMb: Math.round(peakKb / 1024),
        cpuSeconds: {
          service: tenths(used("service")),
          postgres: tenths(used("postgres")),
          task: tenths(used("task")),
          others: tenths(Math.max(0, used("machine") - ours)),
        },
      };
    },
  };
}

/** The service counts as quiet once it used less than this share of one core over a sample. */
const QUIET_SHARE = 0.2;
const QUIET_SAMPLE_MS = 500;

/**
 * Waits until the service is quiet (what an attack left behind has run its course: messages still
 * parsing, deliveries still timing out), at most `maxMs`; whether it got quiet.
 */
export async function waitUntilQuiet(servicePid: number, maxMs: number): Promise<boolean> {
  const deadline = performance.now() + maxMs;
  let last = processCpuSeconds(servicePid);
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, QUIET_SAMPLE_MS));
    const now = processCpuSeconds(servicePid);
    if (now - last < QUIET_SHARE * QUIET_SAMPLE_MS / 1000) return true;
    last = now;
  }
  return false;
}
