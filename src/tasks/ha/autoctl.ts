// pg_autoctl as `deno task ha` runs it: as the postgres user, with the layout's own folders for its
// configuration and state (XDG), one command at a time (`autoctl`) or as the agent that keeps a
// node (`spawnAgent`, its output appended to a log file). Every agent is remembered, so the layout
// can stop them all.
import { run } from "../chaos/cluster.ts";
import { PG_BIN } from "./tools.ts";

/** setpriv's arguments that run a command as the postgres user with a clean environment. */
export const AS_POSTGRES = ["--reuid=postgres", "--regid=postgres", "--init-groups", "--reset-env"];

export interface Autoctl {
  /** `pg_autoctl args...`, its output. */
  autoctl(args: string[]): Promise<string>;
  /** `pg_autoctl run` for a data directory, its output appended to `log`. */
  spawnAgent(pgdata: string, log: string): Deno.ChildProcess;
  /** Every agent spawned, running or not. */
  agents: Deno.ChildProcess[];
}

/** pg_autoctl with its configuration and state under `dir`. */
export function autoctlIn(dir: string): Autoctl {
  const env = {
    PATH: `${PG_BIN}:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOME: dir,
    XDG_CONFIG_HOME: `${dir}/config`,
    XDG_DATA_HOME: `${dir}/share`,
    XDG_RUNTIME_DIR: `${dir}/run`,
    PG_AUTOCTL_DEBUG: "",
  };
  const command = (args: string[]) => [
    ...AS_POSTGRES,
    "env",
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
    "pg_autoctl",
    ...args,
  ];
  const agents: Deno.ChildProcess[] = [];
  return {
    agents,
    autoctl: (args) => run("setpriv", command(args)),
    spawnAgent(pgdata, log) {
      const file = Deno.openSync(log, { create: true, append: true });
      const child = new Deno.Command("setpriv", {
        args: command(["run", "--pgdata", pgdata]),
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      (async () => {
        const writer = file.writable.getWriter();
        await Promise.all([child.stdout, child.stderr].map(async (stream) => {
          for await (const chunk of stream) await writer.write(chunk).catch(() => {});
        })).catch(() => {});
        await writer.close().catch(() => {});
      })();
      agents.push(child);
      return child;
    },
  };
}
