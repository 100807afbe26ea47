// One Postgres node of `deno task ha`'s layout: its name, port and data directory, and what the
// rounds do to it: start its pg_autoctl agent, kill -9 the whole node (agent and Postgres), or only
// its postmaster (which its agent then restarts).
import { run } from "../chaos/cluster.ts";
import type { Autoctl } from "./autoctl.ts";
import { descendants, killEach, postmasterPid } from "./processes.ts";

export interface HaNode {
  name: string;
  port: number;
  pgdata: string;
  /** Runs `pg_autoctl run` for this node (it starts and keeps its Postgres). */
  startAgent(): void;
  /** kill -9 of the agent (when it runs) and then of every Postgres process of the node. */
  killAll(): Promise<void>;
  /** kill -9 of the node's postmaster only; its agent restarts it. */
  killPostmaster(): Promise<number>;
  agentRunning(): boolean;
}

/** The node `name` in the layout's folder `dir`, its agent spawned through `autoctl`. */
export function haNode(
  where: { name: string; port: number; dir: string },
  autoctl: Pick<Autoctl, "spawnAgent">,
): HaNode {
  const { name, port, dir } = where;
  const pgdata = `${dir}/${name}`;
  let agent: Deno.ChildProcess | undefined;
  return {
    name,
    port,
    pgdata,
    startAgent() {
      agent = autoctl.spawnAgent(pgdata, `${dir}/${name}.log`);
    },
    agentRunning: () => agent !== undefined,
    async killAll() {
      // The agent is a supervisor: its services (one keeps Postgres running) are its children.
      const pids = new Set<number>();
      if (agent) { for (const pid of await descendants(agent.pid)) pids.add(pid); }
      const postmaster = await postmasterPid(pgdata);
      if (postmaster) { for (const pid of await descendants(postmaster)) pids.add(pid); }
      killEach(pids);
      if (agent) await agent.status;
      agent = undefined;
    },
    async killPostmaster() {
      const pid = await postmasterPid(pgdata);
      if (!pid) throw new Error(`${name}: no postmaster`);
      await run("kill", ["-9", String(pid)]);
      return pid;
    },
  };
}
