// The database layout of `deno task ha`, built with pg_auto_failover as its documentation does on
// one machine: a monitor, then two Postgres nodes that register with it (the first becomes the
// primary, the second its synchronous standby), each kept by its own `pg_autoctl run` agent. All
// in a temporary folder, run as the postgres user on spare ports; drop() stops and removes it all.
// The settings are in settings.ts, pg_autoctl's runner in autoctl.ts, a node in node.ts.
import { freePort } from "../bench/system.ts";
import { run } from "../chaos/cluster.ts";
import { PG_BIN } from "./tools.ts";
import { AS_POSTGRES, type Autoctl, autoctlIn } from "./autoctl.ts";
import { type HaNode, haNode } from "./node.ts";
import { descendants, killEach, waitFor } from "./processes.ts";
import { HA_DATABASE, MONITOR_SETTINGS, NETWORK_PARTITION_SECONDS } from "./settings.ts";

export interface NodeState {
  name: string;
  port: number;
  reported: string;
  assigned: string;
}

export interface HaLayout {
  dir: string;
  monitorUrl: string;
  nodes: HaNode[];
  /** The service's URL: both nodes, the writable one wanted. */
  databaseUrl: string;
  /** The monitor's view of the nodes (`pg_autoctl show state`). */
  states(): Promise<NodeState[]>;
  /** Waits until one node is primary and the other secondary, both reported and assigned. */
  settled(timeoutMs: number): Promise<{ primary: HaNode; secondary: HaNode }>;
  /** Waits until the monitor's states satisfy `ok`. */
  waitStates(what: string, timeoutMs: number, ok: (states: NodeState[]) => boolean): Promise<NodeState[]>;
  /** `pg_autoctl` as the postgres user with this layout's environment. */
  autoctl(args: string[]): Promise<string>;
  drop(): Promise<void>;
}

export async function createHaLayout(say: (line: string) => void): Promise<HaLayout> {
  const dir = await Deno.makeTempDir({ prefix: "ha-" });
  await run("chown", ["postgres:postgres", dir]);
  const runner = autoctlIn(dir);
  const { autoctl } = runner;
  const monitorPort = freePort();
  const monitorData = `${dir}/monitor`;
  const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
  const nodes: HaNode[] = [];
  const layout: HaLayout = {
    dir,
    monitorUrl,
    nodes,
    databaseUrl: "",
    autoctl,
    async states() {
      const text = await autoctl(["show", "state", "--monitor", monitorUrl, "--json"]);
      const rows = JSON.parse(text) as {
        nodename: string;
        nodeport: number;
        current_group_state: string;
        assigned_group_state: string;
      }[];
      return rows.map((r) => ({
        name: r.nodename,
        port: r.nodeport,
        reported: r.current_group_state,
        assigned: r.assigned_group_state,
      }));
    },
    async waitStates(what, timeoutMs, ok) {
      const deadline = performance.now() + timeoutMs;
      let last: NodeState[] = [];
      while (performance.now() < deadline) {
        last = await layout.states().catch(() => last);
        if (ok(last)) return last;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      throw new Error(`${what}: not within ${timeoutMs} ms; states ${JSON.stringify(last)}`);
    },
    async settled(timeoutMs) {
      const states = await layout.waitStates("primary and secondary", timeoutMs, (s) =>
        s.length === 2 &&
        s.some((n) => n.reported === "primary" && n.assigned === "primary") &&
        s.some((n) => n.reported === "secondary" && n.assigned === "secondary"));
      const byState = (state: string) =>
        nodes.find((n) => n.port === states.find((s) => s.reported === state)!.port)!;
      return { primary: byState("primary"), secondary: byState("secondary") };
    },
    drop: () => dropLayout({ dir, pgdatas: [monitorData, ...nodes.map((n) => n.pgdata)], runner, say }),
  };

  try {
    await startMonitor({ monitorData, monitorPort, runner });
    for (const name of ["node1", "node2"]) {
      const node = haNode({ name, port: freePort(), dir }, runner);
      nodes.push(node);
      await autoctl([
        "create",
        "postgres",
        "--pgdata",
        node.pgdata,
        "--pgport",
        String(node.port),
        "--hostname",
        "127.0.0.1",
        "--name",
        name,
        "--dbname",
        HA_DATABASE,
        "--auth",
        "trust",
        "--no-ssl",
        "--monitor",
        monitorUrl,
      ]);
      await autoctl([
        "config",
        "set",
        "--pgdata",
        node.pgdata,
        "timeout.network_partition_timeout",
        String(NETWORK_PARTITION_SECONDS),
      ]);
      node.startAgent();
      if (name === "node1") {
        await layout.waitStates(
          "node1 single",
          60_000,
          (s) => s.some((n) => n.name === "node1" && n.reported === "single"),
        );
      }
    }
    await layout.settled(120_000);
    layout.databaseUrl =
      `postgres://postgres@127.0.0.1:${nodes[0].port},127.0.0.1:${nodes[1].port}/${HA_DATABASE}` +
      "?target_session_attrs=read-write";
  } catch (error) {
    await layout.drop();
    throw error;
  }
  return layout;
}

/** The monitor: created, kept by its agent, and given MONITOR_SETTINGS once it answers. */
async function startMonitor(
  { monitorData, monitorPort, runner }: { monitorData: string; monitorPort: number; runner: Autoctl },
) {
  await runner.autoctl([
    "create",
    "monitor",
    "--pgdata",
    monitorData,
    "--pgport",
    String(monitorPort),
    "--hostname",
    "127.0.0.1",
    "--auth",
    "trust",
    "--no-ssl",
  ]);
  /** One statement on the monitor's database, as `user`. */
  const monitorSql = (user: string, statement: string) =>
    run("psql", [
      "-h",
      "127.0.0.1",
      "-p",
      String(monitorPort),
      "-U",
      user,
      "-d",
      "pg_auto_failover",
      "-Atqc",
      statement,
    ]);
  runner.spawnAgent(monitorData, `${monitorData}.log`);
  await waitFor(
    "the monitor",
    30_000,
    () => monitorSql("autoctl_node", "select 1").then(() => true),
  );
  for (const [name, value] of Object.entries(MONITOR_SETTINGS)) {
    await monitorSql("postgres", `alter system set ${name} = '${value}'`);
  }
  await monitorSql("postgres", "select pg_reload_conf()");
}

/** Every process of the layout, by id (the agents, their services, the Postgres they started), then its folder. */
async function dropLayout(
  { dir, pgdatas, runner, say }: {
    dir: string;
    pgdatas: string[];
    runner: Autoctl;
    say: (line: string) => void;
  },
) {
  const { agents } = runner;
  const processes = new Set<number>();
  for (const agent of agents) for (const pid of await descendants(agent.pid)) processes.add(pid);
  for (const agent of agents) {
    try {
      agent.kill("SIGTERM");
    } catch { /* gone */ }
  }
  await Promise.race([
    Promise.all(agents.map((a) => a.status)),
    new Promise((resolve) => setTimeout(resolve, 15_000)),
  ]);
  // Whatever survived (a postmaster whose agent was killed), by its data directory.
  for (const pgdata of pgdatas) {
    await run("setpriv", [...AS_POSTGRES, `${PG_BIN}/pg_ctl`, "stop", "-D", pgdata, "-m", "immediate"])
      .catch(() => {});
  }
  killEach(processes);
  for (let attempt = 0;; attempt++) {
    try {
      await Deno.remove(dir, { recursive: true });
      break;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) break;
      if (attempt >= 20) {
        say(`cannot remove ${dir}: ${error}`);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
