// What does not shard by wallet. Every other table's primary key and unique constraints lead with
// `wallet_id`, so on Citus it is distributed by `wallet_id`, all in one colocation group, and every
// billed call stays on one node (tests/citus_readiness_test.ts keeps both lists true).

/** How a global table lives on a distributed engine. */
export type GlobalPlan = "reference table" | "kept on the coordinator";

export interface GlobalTable {
  table: string;
  reason: string;
  plan: GlobalPlan;
  /** What the plan means for this table. */
  how: string;
}

export const GLOBAL_TABLES: readonly GlobalTable[] = [
  {
    table: "schema_migrations",
    reason: "the applied migration files, one row per file: the schema's, not a wallet's",
    plan: "kept on the coordinator",
    how: "migrations run on the coordinator, which propagates DDL to the shards",
  },
  {
    table: "service_settings",
    reason: "settings of the whole service (the generated SERVER_SECRET), read by every instance",
    plan: "reference table",
    how: "written once, read everywhere: a copy on every node",
  },
  {
    table: "token_requests",
    reason: "the POST /token limit is per client address, before any wallet exists",
    plan: "kept on the coordinator",
    how: "one small upsert per new token; never joined with wallet rows (a reference table would " +
      "write every node on each POST /token)",
  },
];

/**
 * Unique keys of wallet tables that do not lead with `wallet_id`: a lookup from something a caller
 * presents (a key, a mail address) to its wallet, or the log's global order. Citus cannot enforce
 * uniqueness across shards on them; each plan keeps the guarantee.
 */
export interface GlobalKey {
  table: string;
  columns: readonly string[];
  reason: string;
  plan: string;
}

export const GLOBAL_KEYS: readonly GlobalKey[] = [
  {
    table: "events",
    columns: ["position"],
    reason: "the log's global order: projections catch up, audit and replay page by position",
    plan: "position comes from one identity sequence on the coordinator, unique by construction; on " +
      "Citus the index becomes (wallet_id, position) and readers page per shard",
  },
  {
    table: "scoped_keys",
    columns: ["key_hash"],
    reason: "a scoped key is presented alone: its hash finds its wallet",
    plan: "a reference table scoped_key_lookup (key_hash primary key, wallet_id), written with the " +
      "key; the distributed table keeps (wallet_id, key_hash) unique",
  },
  {
    table: "webhooks",
    columns: ["email"],
    reason: "inbound mail names only its address: the address finds its wallet and webhook",
    plan: "a reference table mailbox_lookup (email primary key, wallet_id, webhook_id), written " +
      "with the webhook; the distributed table keeps (wallet_id, email) unique",
  },
];

/** The global table named `table`, if it is one. */
export function globalTable(table: string): GlobalTable | undefined {
  return GLOBAL_TABLES.find((t) => t.table === table);
}
