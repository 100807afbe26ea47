// Transactions that say, when the database fails them, whether they may have committed: a failure
// before the body finished changed nothing; one after it (COMMIT sent, its answer lost) is unknown.
import type { Sql, Tx } from "./connect.ts";
import { asDatabaseFault } from "./faults.ts";

/** sql.begin, with faults of the database thrown as DatabaseUnavailableError and their outcome. */
export async function inTransaction<T>(sql: Sql, body: (tx: Tx) => Promise<T>): Promise<T> {
  let commitSent = false;
  try {
    return await sql.begin(async (tx) => {
      const result = await body(tx);
      // postgres.js sends COMMIT as soon as the body resolves.
      commitSent = true;
      return result;
    }) as T;
  } catch (error) {
    throw asDatabaseFault(error, commitSent ? "unknown" : "unchanged");
  }
}
