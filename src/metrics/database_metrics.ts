// Database families: pool connections in use and waiting (read from the driver at scrape time),
// calls that ran out of time (DATABASE_TIMEOUT_MS), and whether the database is out now, with the
// seconds since the last outage ended. An outage starts at the first failure that means "cannot
// reach the database" (db/faults.ts) and ends at the next answer, as the polling loops see them.
import { Counter, Gauge } from "prom-client";
import { metricsOn, PREFIX, registry, Sources } from "./registry.ts";

/** The driver's pool at a moment. */
export interface PoolState {
  inUse: number;
  waiting: number;
  size: number;
}

const pools = new Sources<PoolState>();
const total = (pick: (state: PoolState) => number) => pools.read().reduce((sum, s) => sum + pick(s), 0);

new Gauge({
  name: `${PREFIX}db_pool_connections_in_use`,
  help: "Pool connections running a query or holding a transaction",
  registers: [registry],
  collect() {
    this.set(total((s) => s.inUse));
  },
});
new Gauge({
  name: `${PREFIX}db_pool_waiting`,
  help: "Queries waiting for a free pool connection",
  registers: [registry],
  collect() {
    this.set(total((s) => s.waiting));
  },
});
new Gauge({
  name: `${PREFIX}db_pool_size`,
  help: "The pool's bound on connections",
  registers: [registry],
  collect() {
    this.set(total((s) => s.size));
  },
});
const timeouts = new Counter({
  name: `${PREFIX}db_timeouts_total`,
  help: "Waits for the database that ran past DATABASE_TIMEOUT_MS",
  registers: [registry],
});
const outages = new Counter({
  name: `${PREFIX}db_outages_total`,
  help: "Database outages seen (each counted once, when it starts)",
  registers: [registry],
});

const startedAt = performance.now();
let outageSince: number | undefined;
let lastOutageEnd: number | undefined;

new Gauge({
  name: `${PREFIX}db_outage`,
  help: "1 while the database cannot be reached, else 0",
  registers: [registry],
  collect() {
    this.set(outageSince === undefined ? 0 : 1);
  },
});
new Gauge({
  name: `${PREFIX}db_seconds_since_outage`,
  help: "Seconds since the last outage ended (0 during one; since the start when there was none)",
  registers: [registry],
  collect() {
    if (outageSince !== undefined) return this.set(0);
    this.set((performance.now() - (lastOutageEnd ?? startedAt)) / 1000);
  },
});

/** The pool of a process, read at scrape time. */
export function watchPool(read: () => PoolState): () => void {
  return pools.add(read);
}

export function recordDatabaseTimeout(): void {
  if (metricsOn()) timeouts.inc();
}

/** A failure that means the database cannot be reached: an outage starts if none is on. */
export function recordDatabaseUnavailable(): void {
  if (!metricsOn() || outageSince !== undefined) return;
  outageSince = performance.now();
  outages.inc();
}

/** The database answered: an outage, if one was on, is over. */
export function recordDatabaseAnswered(): void {
  if (outageSince === undefined) return;
  outageSince = undefined;
  lastOutageEnd = performance.now();
}
