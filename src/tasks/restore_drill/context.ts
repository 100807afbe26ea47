// What the two kinds of source drill (own_source.ts, live_source.ts) get from the runner
// (drill.ts): timed steps, clusters that are dropped at the end, and a restore with its checks.
import type { Sql } from "../../db/connect.ts";
import type { DrillCluster } from "./clusters.ts";
import type { Repository } from "./pgbackrest.ts";
import { compareStates, type LedgerState, readLedgerState } from "./ledger_state.ts";
import type { RestoreReport } from "./report.ts";

export const LATEST = "latest backup and every archived WAL segment";

export interface RestoreSpec {
  kind: RestoreReport["kind"];
  target: string;
  /** The repository, and pgbackrest restore's options beyond the data folder (`pgdata`). */
  repo: Pick<Repository, "command">;
  args(pgdata: string): string[];
  /** MASTER_KEY or MASTER_KEY_FILE, for replay. */
  masterKeyEnv: Record<string, string>;
  /** Off for a live source, whose max_connections and the like may exceed a new cluster's. */
  hotStandby: boolean;
  /** Reads the restored cluster and compares it with what it must hold. */
  compare(sql: Sql): Promise<Pick<RestoreReport, "expected" | "restored" | "comparison">>;
  /** What a clean comparison shows, for the report line. */
  sameMeans: string;
}

export interface Attached {
  stop?(): Promise<void>;
  remove?(): Promise<void>;
  output?(): string;
}

/** What a source's drill gets from the runner. */
export interface DrillContext {
  say(line: string): void;
  step<T>(name: string, work: () => Promise<T>): Promise<T>;
  steps: Record<string, number>;
  /** A new cluster, dropped at clean-up if still there. */
  newCluster(role: string): Promise<DrillCluster>;
  /** Something more for clean-up: stopped before the clusters go (the service), or removed after them
   * (a repository); `output` for a failure report. */
  attach(resource: Attached): void;
  restoreAndCheck(spec: RestoreSpec): Promise<RestoreReport>;
}

/** The restored counts beside the expected ones. */
export function counts(expected: LedgerState, restored: LedgerState) {
  return {
    expected: { wallets: expected.wallets, events: expected.events },
    restored: { wallets: restored.wallets, events: restored.events },
  };
}

/** Compares a restored cluster with one state read on the source: exactly the same. */
export function sameAs(expected: LedgerState) {
  return async (sql: Sql) => {
    const restored = await readLedgerState(sql);
    return { ...counts(expected, restored), comparison: compareStates(expected, restored) };
  };
}
