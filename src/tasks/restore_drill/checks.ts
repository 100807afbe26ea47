// The project's own checks on a restored cluster: `deno task audit` and `deno task replay`, run as
// an operator runs them (the task's line from deno.json, DATABASE_URL and the service's MASTER_KEY).
import { taskCommand } from "../bench/offline.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

export interface TaskResult {
  clean: boolean;
  seconds: number;
  /** The task's summary line, e.g. `audit: 1003 wallets, 1000063 events, ... 0 mismatches (1.2 s)`. */
  summary: string;
}

export async function runCheckTask(
  task: "audit" | "replay",
  /** DATABASE_URL and MASTER_KEY (or MASTER_KEY_FILE). */
  env: Record<string, string>,
): Promise<TaskResult> {
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: await taskCommand(task),
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const seconds = (performance.now() - started) / 1000;
  const output = new TextDecoder().decode(out.stdout).trim();
  const summary = output.split("\n")[0] ?? "";
  if (!summary.startsWith(`${task}:`)) {
    throw new Error(
      `Task ${task} failed (exit ${out.code}):\n${output}\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return { clean: out.code === 0, seconds, summary: out.code === 0 ? summary : output.slice(0, 2000) };
}
