// The processes of `deno task ha`'s layout as the kernel and Postgres show them: a process and
// everything below it (/proc), a data directory's postmaster (postmaster.pid), SIGKILL by id, and
// waiting for something to come up.

/** `pid` and every process below it, read from /proc (parents first). */
export async function descendants(pid: number): Promise<number[]> {
  const parentOf = new Map<number, number[]>();
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`).catch(() => "");
    // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (!parentOf.has(ppid)) parentOf.set(ppid, []);
    parentOf.get(ppid)!.push(Number(entry.name));
  }
  const found = [pid];
  for (let i = 0; i < found.length; i++) found.push(...(parentOf.get(found[i]) ?? []));
  return found;
}

/** The postmaster of a data directory, when its postmaster.pid names one. */
export async function postmasterPid(pgdata: string): Promise<number | undefined> {
  try {
    const first = (await Deno.readTextFile(`${pgdata}/postmaster.pid`)).split("\n")[0];
    const pid = Number(first);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** SIGKILL to each process, by its id; one already gone is skipped. */
export function killEach(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* gone already */ }
  }
}

/** Waits until `check` holds (a failed check is a no), at most `timeoutMs`. */
export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what}: not up within ${timeoutMs} ms`);
}
