// What the restore drill reports: per restore, the time it took, the recovery point it reached and
// how it compared with the source; for the whole drill, the backups, the writes and every step.
import type { BackupInfo } from "./pgbackrest.ts";
import type { StateComparison } from "./ledger_state.ts";
import type { TaskResult } from "./checks.ts";

export interface RestoreReport {
  kind: "latest" | "pointInTime";
  /** What was restored: the latest backup and all archived WAL, or up to the named point. */
  target: string;
  /** pgbackrest restore, then the server's start to its promotion (WAL replay). */
  restoreSeconds: number;
  recoverySeconds: number;
  /** Recovery time: restore and WAL replay, until the cluster takes writes. */
  rtoSeconds: number;
  /** The last transaction replayed (pg_last_xact_replay_timestamp), and the server's own words. */
  reachedTransactionAt: string | null;
  recoveryLog: string[];
  expected: { wallets: number; events: number };
  restored: { wallets: number; events: number };
  comparison: StateComparison;
  audit: TaskResult;
  replay: TaskResult;
  ok: boolean;
}

export interface DrillReport {
  events: number;
  databaseMb: number;
  pgbackrest: string;
  backups: BackupInfo[];
  /**
   * Billed writes acknowledged by the service: before the differential backup, after it, after the
   * point (none with a live source: the drill writes nothing there).
   */
  writes: { beforeDiff: number; afterDiff: number; afterPoint: number; walletsAfterPoint: number } | null;
  restorePoint: { name: string; lsn: string; at: string };
  archive: { timeoutSeconds: number; segmentArchivedSeconds: number };
  steps: Record<string, number>;
  restores: RestoreReport[];
  ok: boolean;
}

export const round2 = (n: number) => Math.round(n * 100) / 100;

/** Says one line per backup (size, stored size, WAL range); the backups. */
export function describeBackups(say: (line: string) => void, backups: BackupInfo[]): BackupInfo[] {
  for (const b of backups) {
    say(
      `backup ${b.label} (${b.type}): ${Math.round(b.size / 1024 / 1024)} MB of database, ` +
        `${Math.round(b.repoSize / 1024 / 1024)} MB stored, WAL ${b.walStart}..${b.walStop}`,
    );
  }
  return backups;
}
