// The database layout of `deno task ha`, built with pg_auto_failover as its documentation does on
// one machine: a monitor, then two Postgres nodes that register with it (the first becomes the
// primary, the second its synchronous standby), each kept by its own `pg_autoctl run` agent. All
// in a temporary folder, run as the postgres user on spare ports; drop() stops and removes it all.
import { freePort } from "../bench/system.ts";
import { run } from "../chaos/cluster.ts";
import { PG_BIN } from "./tools.ts";

export const HA_DATABASE = "ha";

/**
 * How fast the monitor gives up on a primary (pg_auto_failover's settings, on the monitor): a
 * health check every second, 2 retries 1 s apart, a node unhealthy 6 s after its agent's last
 * report, and the standby promoted 10 s after that (primary_demote_timeout: the time a primary cut
 * off from the monitor has to stop itself, NETWORK_PARTITION_SECONDS, with room to spare; it must
 * stay longer, or a cut-off primary could still take writes when the standby is promoted). The
 * defaults (5 s, 2 s, 20 s, 30 s against 20 s) fail a lost machine over in about 40 s.
 */
export const MONITOR_SETTINGS: Record<string, string> = {
  "pgautofailover.health_check_period": "1000",
  "pgautofailover.health_check_timeout": "1000",
  "pgautofailover.health_check_max_retries": "2",
  "pgautofailover.health_check_retry_delay": "1000",
  "pgautofailover.node_considered_unhealthy_timeout": "6000",
  "pgautofailover.primary_demote_timeout": "10s",
};

/** A primary that cannot reach the monitor (nor its standby) this long stops itself (pg_autoctl). */
export const NETWORK_PARTITION_SECONDS = 6;

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
  // pg_autoctl keeps its configuration and state under XDG folders: this run's own.
  const env = {
    PATH: `${PG_BIN}:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOME: dir,
    XDG_CONFIG_HOME: `${dir}/config`,
    XDG_DATA_HOME: `${dir}/share`,
    XDG_RUNTIME_DIR: `${dir}/run`,
    PG_AUTOCTL_DEBUG: "",
  };
  const asPostgres = ["--reuid=postgres", "--regid=postgres", "--init-groups", "--reset-env"];
  const autoctl = (args: string[]) =>
    run("setpriv", [
      ...asPostgres,
      "env",
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      "pg_autoctl",
      ...args,
    ]);
  const agents: Deno.ChildProcess[] = [];
  const spawnAgent = (pgdata: string, log: string) => {
    const file = Deno.openSync(log, { create: true, append: true });
    const child = new Deno.Command("setpriv", {
      args: [
        ...asPostgres,
        "env",
        ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
        "pg_autoctl",
        "run",
        "--pgdata",
        pgdata,
      ],
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
  };

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
    async drop() {
      // Every process of the layout, by id: the agents, their services and the Postgres they started.
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
      for (const pgdata of [monitorData, ...nodes.map((n) => n.pgdata)]) {
        await run("setpriv", [...asPostgres, `${PG_BIN}/pg_ctl`, "stop", "-D", pgdata, "-m", "immediate"])
          .catch(() => {});
      }
      for (const pid of processes) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch { /* gone */ }
      }
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
    },
  };

  try {
    await autoctl([
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
    const monitorAgent = spawnAgent(monitorData, `${dir}/monitor.log`);
    void monitorAgent;
    await waitFor(
      "the monitor",
      30_000,
      () => monitorSql("autoctl_node", "select 1").then(() => true),
    );
    for (const [name, value] of Object.entries(MONITOR_SETTINGS)) {
      await monitorSql("postgres", `alter system set ${name} = '${value}'`);
    }
    await monitorSql("postgres", "select pg_reload_conf()");

    for (const name of ["node1", "node2"]) {
      const port = freePort();
      const pgdata = `${dir}/${name}`;
      let agent: Deno.ChildProcess | undefined;
      const node: HaNode = {
        name,
        port,
        pgdata,
        startAgent() {
          agent = spawnAgent(pgdata, `${dir}/${name}.log`);
        },
        agentRunning: () => agent !== undefined,
        async killAll() {
          // The agent is a supervisor: its services (one keeps Postgres running) are its children.
          const pids = new Set<number>();
          if (agent) { for (const pid of await descendants(agent.pid)) pids.add(pid); }
          const postmaster = await postmasterPid(pgdata);
          if (postmaster) { for (const pid of await descendants(postmaster)) pids.add(pid); }
          for (const pid of pids) {
            try {
              Deno.kill(pid, "SIGKILL");
            } catch { /* gone already */ }
          }
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
      nodes.push(node);
      await autoctl([
        "create",
        "postgres",
        "--pgdata",
        pgdata,
        "--pgport",
        String(port),
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
        pgdata,
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

/** `pid` and every process below it, read from /proc (parents first). */
async function descendants(pid: number): Promise<number[]> {
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

async function postmasterPid(pgdata: string): Promise<number | undefined> {
  try {
    const first = (await Deno.readTextFile(`${pgdata}/postmaster.pid`)).split("\n")[0];
    const pid = Number(first);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what}: not up within ${timeoutMs} ms`);
}
